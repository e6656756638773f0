"""Exceptions raised by clspmv. Every one derives from :class:`ClspmvError`."""

from __future__ import annotations


class ClspmvError(Exception):
    """Base class of every error raised by clspmv."""


class DeviceError(ClspmvError):
    """No usable OpenCL device, a feature the device lacks, or an allocation it cannot hold."""


class BuildError(DeviceError):
    """An OpenCL kernel failed to compile; the message carries the compiler log."""


class UnsuitableFormatError(ClspmvError, ValueError):
    """The storage format would need an absurd amount of padding for this matrix."""


class MatrixFormatError(ClspmvError, ValueError):
    """A Matrix Market file is malformed; the message names the line."""


class StoredMatrixError(ClspmvError, ValueError):
    """A pickled device matrix is damaged, or was stored by an incompatible clspmv."""


class IndexOverflowError(ClspmvError, ValueError):
    """Dimensions or entry counts do not fit the 32-bit index type of the kernels."""


class ClspmvWarning(RuntimeWarning):
    """Base class of the warnings clspmv issues (a cache rebuilt, a device fallback, ...).

    Filter them together with ``warnings.filterwarnings("ignore", category=ClspmvWarning)``.
    """


class SettingError(ClspmvError, ValueError):
    """An environment variable of clspmv holds a value it cannot use; the message names the
    variable, the value and the fix."""
