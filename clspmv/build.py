"""The one way a kernel is built: a ``.cl`` file plus ``-D`` options, cached per context.

Kernel sources are plain OpenCL C files in ``kernels_cl/`` (shipped inside the wheel as
``clspmv/kernels_cl``). They are specialised only through preprocessor definitions such as
``-DVALUE_T=double -DINDEX_T=int -DWG=256``; ``#include "x.h"`` lines are resolved here, from the
same folder, so the compiler never needs a file-system path.

Kernels know their scalar argument types (:func:`typed`, from the kernel argument info that
``-cl-kernel-arg-info`` keeps): pyopencl then packs scalars itself, where setting an untyped
numpy scalar argument costs about 9 us of host time each on PoCL (a product launch sets four to
six of them).
"""

from __future__ import annotations

import re
import threading
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pyopencl as cl

from .device import Device
from .errors import BuildError

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)

_C_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}

ARG_INFO_OPTION = "-cl-kernel-arg-info"
"""Every program is built with this option, so that :func:`typed` can read argument types."""

_SCALAR_TYPES = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
                 "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
                 "float": np.float32, "double": np.float64}


def kernel_dir() -> Path:
    """Where the ``.cl`` sources are: inside the installed package, else the source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "kernels_cl", here.parent / "kernels_cl"):
        if (candidate / "common.h").is_file():
            return candidate
    raise FileNotFoundError(f"clspmv kernel sources not found next to {here}")


@cache
def source(name: str) -> str:
    """The text of one kernel file with its ``#include "..."`` lines expanded (once each)."""
    folder = kernel_dir()
    seen: set[str] = set()

    def expand(file: str) -> str:
        if file in seen:
            return ""
        seen.add(file)
        text = (folder / file).read_text()
        return _INCLUDE.sub(lambda m: expand(m.group(1)), text)

    return expand(name)


def c_type(dtype: np.dtype) -> str:
    """The OpenCL C type name of a numpy value type clspmv supports."""
    return _C_TYPES[np.dtype(dtype)]


def options_for(dtype: np.dtype, cl_std: str | None = None, accumulate: np.dtype | None = None,
                **defines: object) -> tuple[str, ...]:
    """``-D`` options for a value type plus any format-specific definitions; ``cl_std`` (e.g.
    ``"CL3.0"``) adds ``-cl-std=...`` for kernels that need a newer OpenCL C than 1.2.
    ``accumulate`` (default: the value type) is the type of the kernels' sums, ``ACC_T``: float64
    sums of float32 values are clspmv's ``dtype="mixed"`` (the options, and so the program cache
    key, then carry ``-DACC_T=double -DACC_IS_DOUBLE=1``)."""
    opts: dict[str, object] = {"VALUE_T": c_type(dtype), "INDEX_T": "int", **defines}
    if np.dtype(dtype) == np.float64:
        opts["VALUE_IS_DOUBLE"] = 1
    if accumulate is not None and np.dtype(accumulate) != np.dtype(dtype):
        opts["ACC_T"] = c_type(accumulate)
        if np.dtype(accumulate) == np.float64:
            opts["ACC_IS_DOUBLE"] = 1
    std = (f"-cl-std={cl_std}",) if cl_std else ()
    return std + tuple(f"-D{key}={value}" for key, value in sorted(opts.items()))


_cache: dict[tuple[cl.Context, str, tuple[str, ...]], cl.Program] = {}
_cache_lock = threading.Lock()
builds = 0
"""Number of programs compiled in this process (tests check that the cache works)."""


def program(device: Device, file: str, options: tuple[str, ...]) -> cl.Program:
    """The built program for (device context, file, options); compiled on first use only."""
    global builds
    # keyed by the context itself, which the key keeps alive: the id() of a context that was
    # garbage-collected can come back as the id() of a new one, whose kernels would then be
    # created from the old context's program
    key = (device.context, file, options)
    with _cache_lock:
        prg = _cache.get(key)
        if prg is None:
            prg = _compile(device, file, options)
            _cache[key] = prg
            builds += 1
        return prg


def _compile(device: Device, file: str, options: tuple[str, ...]) -> cl.Program:
    try:
        with warnings.catch_warnings():
            # NVIDIA prints informational output for every build; it is not an error.
            warnings.simplefilter("ignore", cl.CompilerWarning)
            return cl.Program(device.context, source(file)).build(
                options=[*options, ARG_INFO_OPTION])
    except cl.RuntimeError as err:
        log = _build_log(err, device)
        raise BuildError(
            f"building {file} for {device.name} with options {' '.join(options)} failed:\n{log}"
        ) from err


def _build_log(err: cl.RuntimeError, device: Device) -> str:
    text = str(err)
    if "unknown target CPU" in text:
        text += (
            "\nhint: this PoCL's LLVM does not recognise the host CPU; install a newer PoCL "
            "(for example Debian/Ubuntu's pocl-opencl-icd) or select another device"
        )
    return text


def kernel(device: Device, file: str, name: str, dtype: np.dtype, cl_std: str | None = None,
           accumulate: np.dtype | None = None, stream_float32: bool = False,
           **defines: object) -> cl.Kernel:
    """A new kernel object, so that two matrices never share argument state across threads;
    ``accumulate`` as in :func:`options_for`. Float64 kernels on a device with
    :attr:`Device.stream_hint` are built with ``STREAM_HINT`` (see ``common.h``; float64 products
    of scattered columns gained 6-13 % on an H100); float32 ones only with ``stream_float32``
    (:attr:`clspmv.formats.Format.stream_float32`: the formats whose float32 products it makes
    faster; ``sell``'s, ``pjds``'s and ``csr-adaptive``'s it makes up to 27 % slower on some
    matrices). Kernels on a device with :attr:`Device.warp_shuffle` are built with
    ``WARP_SHUFFLE``, on one with :attr:`Device.narrow_vectors` with ``NARROW_VECTORS``."""
    if device.stream_hint and (np.dtype(dtype) == np.float64 or stream_float32):
        defines["STREAM_HINT"] = 1
    if device.warp_shuffle:
        defines["WARP_SHUFFLE"] = 1
    if device.narrow_vectors:
        defines["NARROW_VECTORS"] = 1
    return typed(cl.Kernel(program(device, file, options_for(dtype, cl_std, accumulate,
                                                             **defines)), name))


def typed(kern: cl.Kernel) -> cl.Kernel:
    """``kern`` with its scalar argument types set (``set_scalar_arg_dtypes``: buffers and local
    memory None, scalars their numpy type), read from the kernel argument info; unchanged where
    the device gives no argument info or an argument is of another type (a vector, a struct).
    Scalars passed to a typed kernel are converted to the declared type."""
    types: list[type | None] = []
    try:
        for i in range(kern.num_args):
            if (kern.get_arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
                    != cl.kernel_arg_address_qualifier.PRIVATE):
                types.append(None)
                continue
            name = kern.get_arg_info(i, cl.kernel_arg_info.TYPE_NAME).strip()
            if name.endswith("*") or name not in _SCALAR_TYPES:
                return kern
            types.append(_SCALAR_TYPES[name])
    except cl.Error:
        return kern
    kern.set_scalar_arg_dtypes(types)
    return kern
