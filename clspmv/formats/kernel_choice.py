"""The kernels of a format chosen on an uploaded matrix: :class:`KernelChoice`, a base of
:class:`~clspmv.formats.base.Format`. :meth:`KernelChoice.retuned` launches the same arrays with
another work-group size or other kernel options; :meth:`KernelChoice.switched` moves them to
another format sharing them (the CSR kernels,
:meth:`clspmv.formats.csr.CsrFamily.switched`)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, ClassVar

from .conversion import check_unroll
from .layout import Layout

if TYPE_CHECKING:
    from .base import Format


class KernelChoice:
    """What :class:`~clspmv.formats.base.Format` changes on an uploaded matrix (see the module
    docstring)."""

    kernel_options: ClassVar[tuple[str, ...]] = ()
    """Parameters that choose kernels only, not the stored arrays: :meth:`retuned` changes them
    (and the work-group size) on the uploaded matrix. Empty: the format cannot be retuned."""

    def check_params(self) -> None:
        """Raise ValueError when :attr:`params` do not suit :attr:`layout` (called after
        :meth:`retuned` changed them): here, more work-items per row than per work-group, or an
        ``unroll`` not in :data:`UNROLL_FACTORS`."""
        check_unroll(self.params.get("unroll", 1))
        threads = self.params.get("threads_per_row", 1)
        if threads > self.layout.work_group_size:
            raise ValueError(f"format {self.name!r} shares each row among {threads} work-items: "
                             f"the work-group size must be at least {threads}, got "
                             f"{self.layout.work_group_size}")

    def retuned(self, work_group_size: int | None = None, **options: int) -> Format:
        """This matrix launched with another work-group size and/or other
        :attr:`kernel_options`, sharing the device buffers (nothing is converted or copied).

        Raises ValueError for a format without kernel options, a parameter that would change
        the stored arrays, or values the format refuses.
        """
        if self.device is None:
            raise RuntimeError("retune an uploaded format")
        if not self.kernel_options:
            raise ValueError(f"format {self.name!r} has no kernel options to retune; convert "
                             "again with DeviceMatrix.from_scipy(..., work_group_size=...)")
        fixed = sorted(set(options) - set(self.kernel_options))
        if fixed:
            raise ValueError(
                f"format {self.name!r} cannot retune {', '.join(fixed)} (it changes the stored "
                f"arrays, or is not a parameter of the format): convert again with "
                f"DeviceMatrix.from_scipy; retunable: "
                f"{', '.join(('work_group_size', *self.kernel_options))}")
        new = object.__new__(type(self))  # copy.copy would pickle: buffers refuse that
        new.__dict__.update(self.__dict__)
        new.layout = Layout.for_device(self.device, work_group_size
                                       or self.layout.work_group_size)
        new.params = {**self.params, **options}
        new.requested = {**self.requested, **options}
        new._lazy_kernels = {}
        new.buffers = dict(self.buffers)  # the arrays shared, the scratch buffers its own
        new._scratch = {}
        for key, nbytes in self._scratch.items():
            new.scratch_buffer(key, nbytes)
        new.check_params()
        new.prepare_kernels()
        return new

    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        """The format's parameters: those :meth:`from_csr` takes after the matrix and layout."""
        return tuple(inspect.signature(cls.from_csr).parameters)[2:]

    def switched(self, target: type[Format], work_group_size: int | None = None,
                 **params: object) -> Format:
        """This matrix in the format ``target``, sharing the stored arrays: only the CSR kernels
        can (:meth:`clspmv.formats.csr.CsrFamily.switched`); here ValueError."""
        raise ValueError(f"format {self.name!r} stores no CSR arrays for format {target.name!r} "
                         "to share: convert the matrix again with DeviceMatrix.from_scipy(..., "
                         f"format={target.name!r})")

