"""How the benchmark turns an exception into a record's ``status`` and ``reason``.

Skipped: the format or operation cannot run this matrix here (unsuitable, too large, out of host
or device memory, no fp64, :class:`NotApplicable`). Failed: a kernel that does not build, or
another driver error. Programming errors are re-raised, never recorded.
"""

from __future__ import annotations

import pyopencl as cl

from ..errors import BuildError, DeviceError, IndexOverflowError, UnsuitableFormatError


class NotApplicable(Exception):
    """The operation does not apply to this matrix (a solver on a non-square matrix, CG on one
    that is not positive definite): the record is ``skipped`` with this message."""


_OUT_OF_MEMORY = (MemoryError, cl.MemoryError)


def first_lines(err: BaseException, lines: int = 3) -> str:
    """The first ``lines`` lines of an exception's message, joined by spaces."""
    return " ".join(str(err).splitlines()[:lines])


def is_out_of_memory(err: cl.Error) -> bool:
    """Whether an OpenCL error says memory or resources ran out."""
    code = getattr(err, "code", None)
    return code in (cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                    cl.status_code.OUT_OF_RESOURCES, cl.status_code.OUT_OF_HOST_MEMORY)


def classify(err: Exception, when: str) -> tuple[str, str]:
    """(status, reason) of a measurement that raised ``err`` while ``when`` (``converting``,
    ``running``); programming errors are re-raised."""
    if isinstance(err, BuildError):
        return "failed", first_lines(err)
    if isinstance(err, (UnsuitableFormatError, DeviceError, IndexOverflowError, NotApplicable)):
        return "skipped", first_lines(err)
    if isinstance(err, _OUT_OF_MEMORY):
        return "skipped", f"out of memory {when}: {first_lines(err)}"
    if isinstance(err, cl.Error):
        if is_out_of_memory(err):
            return "skipped", f"out of device resources {when}: {first_lines(err)}"
        return "failed", f"OpenCL error {when}: {first_lines(err)}"
    raise err
