"""The arguments of a product: shape, dtype and context checks, and the transfers that bring
numpy or pyopencl vectors to the form the kernels take (contiguous, of the matrix's dtype, in one
device buffer without offset). :class:`clspmv.DeviceMatrix` calls these for every product; they
hold no state of their own.
"""

from __future__ import annotations

import decimal
import math
import numbers
from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import host_buffers
from .device import Device
from .errors import DeviceError, IndexOverflowError
from .formats.base import INDEX_LIMIT
from .precision import check_real

Array = np.ndarray | cl_array.Array


def check_unmasked(a: object, what: str) -> None:
    """TypeError for a numpy masked array with masked entries: numpy's conversions drop the mask,
    so the values under it would be used as if they were not masked."""
    if isinstance(a, np.ma.MaskedArray) and np.ma.is_masked(a):
        raise TypeError(f"{what} is a masked array with masked entries, whose values clspmv "
                        f"would use as they are: fill them first ({what}.filled(0))")


def real_array(a: object, what: str) -> np.ndarray:
    """``a`` as a numpy array of real numbers (a view where numpy makes one): TypeError for masked
    entries, complex or non-numeric values and objects numpy cannot read as an array, ValueError
    for ragged nested sequences."""
    check_unmasked(a, what)
    try:
        arr = np.asarray(a)
    except ValueError as err:  # numpy's words for ragged nested lists
        raise ValueError(f"{what} is not a rectangular array of numbers ({err})") from err
    except (TypeError, RuntimeError) as err:  # e.g. a sparse array of another library
        raise TypeError(f"{what} ({type(a).__name__}) does not convert to a numpy array: {err}"
                        ) from err
    if arr.ndim == 0 and arr.dtype == object:
        raise TypeError(f"{what} ({type(a).__name__}) is neither an array nor a sequence of "
                        "numbers: pass a numpy array (for a matrix also a scipy.sparse one)")
    check_real(arr.dtype, what, arr.ndim)
    return arr


def buffer_bytes(shape: tuple[int, ...], dtype: np.dtype, what: str, device: Device) -> int:
    """The bytes of a device buffer of ``shape`` and ``dtype`` for operand ``what``;
    :class:`DeviceError` above the device's largest allocation."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > device.max_allocation:
        raise DeviceError(
            f"{what} needs a buffer of {nbytes} bytes, above the {device.max_allocation} bytes "
            f"{device.name} allows in one allocation; multiply in parts (fewer columns of X at a "
            "time, or blocks of the matrix: row_offset, column_map)")
    return nbytes


def shape_of(a: object) -> tuple[int, ...]:
    """The shape of a numpy-like or pyopencl array."""
    return tuple(a.shape) if isinstance(a, cl_array.Array) else np.shape(a)


def product_shapes(x: object, m: int, n: int, columns: bool, what: str
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Expected (input, output) shapes of op(A) (m x n) times ``x``; for several right-hand sides
    k comes from x."""
    if not columns:
        return (n,), (m,)
    shape = shape_of(x)
    if len(shape) != 2:
        raise ValueError(f"{what} has shape {shape}, expected ({n}, k)")
    k = int(shape[1])
    if max(n, m) * k > INDEX_LIMIT:
        raise IndexOverflowError(
            f"{what} with {k} columns has more than {INDEX_LIMIT} elements, beyond the "
            "32-bit indices of the kernels; multiply fewer columns at a time"
        )
    return (n, k), (m, k)


@dataclass(frozen=True)
class RowBlock:
    """Where a block product's rows lie in a longer vector: ``offset`` and the vector's length
    (``rows`` is the block's own row count)."""

    offset: int
    length: int


def row_block(row_offset: object, rows: int, side: object, what: str) -> RowBlock:
    """Check ``row_offset`` (an int >= 0) against the vector ``side`` (named ``what``) that a
    block of ``rows`` rows writes into or reads from: it must hold rows
    ``[row_offset, row_offset + rows)``."""
    if isinstance(row_offset, bool) or not isinstance(row_offset, (int, np.integer)) \
            or row_offset < 0:
        raise ValueError(f"row_offset must be an int >= 0, got {row_offset!r}")
    if side is None:
        raise ValueError(f"row_offset needs {what}: the longer vector whose rows "
                         f"{row_offset}..{row_offset + rows - 1} the block covers")
    shape = shape_of(side)
    length = int(shape[0]) if len(shape) else 0
    if length < row_offset + rows:
        raise ValueError(f"{what} has {length} rows; the block's {rows} rows from row_offset "
                         f"{row_offset} need at least {row_offset + rows}")
    if length > INDEX_LIMIT:
        raise IndexOverflowError(f"{what} has more rows than the kernels' 32-bit indices reach")
    return RowBlock(int(row_offset), length)


def scalar_arg(value: object, what: str, dtype: np.dtype, finite: bool = False) -> np.generic:
    """``alpha`` or ``beta`` as a scalar of ``dtype``, rounded to nearest as numpy casts (beyond
    float32's range: ±Inf with numpy's overflow warning): any real number (a Python int of any
    size, float, Fraction or Decimal, a numpy real scalar or 0-d array). TypeError for anything
    else, ValueError beyond float64's range and, where ``finite``, for NaN and ±Inf (also once
    rounded to ``dtype``)."""
    if isinstance(value, (numbers.Real, decimal.Decimal)) and not isinstance(value, np.generic):
        try:
            number = float(value)  # exact for floats; ints beyond int64 and Fractions rounded
        except (OverflowError, ValueError) as err:  # 10**400, Decimal("sNaN")
            raise ValueError(f"{what} = {value!r} is not a float64 number ({err})") from err
        scalar = dtype.type(number)
    else:
        arr = np.asarray(value)
        if arr.ndim != 0 or arr.dtype.kind not in "biuf":
            raise TypeError(f"{what} must be a real number, got {value!r}")
        scalar = dtype.type(arr)
    if finite and not math.isfinite(scalar):
        beyond = f"beyond the range of {dtype} (the matrix's dtype)" if math.isfinite(
            float(np.asarray(value, np.float64))) else "not finite"
        raise ValueError(
            f"{what} = {value!r} is {beyond}: the kernels scale each row's sum by {what}, the "
            f"transpose kernels each term, which NaN and Inf tell apart; scale the result "
            f"yourself ({what} * (M @ x)) or x")
    return scalar


def host_input(x: object, shape: tuple[int, ...], what: str, dtype: np.dtype) -> np.ndarray:
    """``x`` as a contiguous numpy array of ``dtype`` (a copy when it is another type, strided,
    reversed or Fortran-ordered: column-major 2-D arrays stay column-major); see
    :func:`real_array` for what is refused."""
    arr = real_array(x, what)
    if arr.shape != shape:
        raise ValueError(f"{what} has shape {arr.shape}, expected {shape}")
    if arr.ndim == 2 and is_fortran(arr):
        return np.asfortranarray(arr, dtype=dtype)
    return np.ascontiguousarray(arr, dtype=dtype)


def host_output(y: object, shape: tuple[int, ...], what: str, dtype: np.dtype
                ) -> np.ndarray | None:
    """A given numpy output checked (it is updated in place), or None (or zeros of an empty
    shape) when none is given."""
    if y is None:
        return None if 0 not in shape else np.zeros(shape, dtype)
    if not isinstance(y, np.ndarray):
        raise TypeError(f"{what} must be a numpy array when the input is one, got "
                        f"{type(y).__name__}")
    check_unmasked(y, what)
    check_output(y, shape, what, dtype)
    if not y.flags.writeable:
        raise ValueError(f"{what} is read-only; it is updated in place")
    return y


def check_output(y: np.ndarray | cl_array.Array, shape: tuple[int, ...], what: str,
                 dtype: np.dtype) -> None:
    """ValueError or TypeError unless ``y`` has ``shape`` and ``dtype``."""
    if y.shape != shape:
        raise ValueError(f"{what} has shape {y.shape}, expected {shape}")
    if y.dtype != dtype:
        raise TypeError(f"{what} has dtype {y.dtype}, expected {dtype} (it is updated in place)")


def device_input(x: cl_array.Array, shape: tuple[int, ...], what: str, device: Device,
                 dtype: np.dtype) -> cl_array.Array | None:
    """A pyopencl input checked, and copied where the kernels cannot take it as it is (an
    offset, another dtype); None when it is empty."""
    if x.shape != shape:
        raise ValueError(f"{what} has shape {x.shape}, expected {shape}")
    if x.context != device.context:
        raise ValueError(f"{what} lives in another OpenCL context than the matrix's device "
                         f"{device.name}; copy it there first")
    check_real(x.dtype, what, x.ndim)
    if not x.flags.forc:
        raise ValueError(
            f"{what} is a non-contiguous pyopencl array (strides {x.strides}); pass a "
            "contiguous one (pyopencl cannot copy strided arrays) or a numpy array"
        )
    if x.size == 0:
        return None
    queue = device.queue
    wait_for_other_queue(x, queue)
    if x.offset or x.dtype != dtype:
        buffer_bytes(shape, dtype, what, device)  # the copy or conversion is a new buffer
    if x.offset:
        if x.ndim == 2:
            raise ValueError(f"{what} must be a C- or F-contiguous array without offset")
        x = x.copy(queue=queue)
    if x.dtype != dtype:
        if is_fortran(x):  # pyopencl's astype gives column-major data row-major strides
            return x.T.astype(dtype, queue=queue).T
        return x.astype(dtype, queue=queue)
    return x


def device_output(y: object, shape: tuple[int, ...], what: str, x: cl_array.Array | None,
                  device: Device, dtype: np.dtype, zeros: bool = False) -> cl_array.Array:
    """A given pyopencl output checked (it is updated in place), else a new one in x's memory
    order (filled with zeros when ``zeros``: a block product leaves entries outside the block
    as they are)."""
    queue = device.queue
    if y is None:
        buffer_bytes(shape, dtype, what, device)
        order = "F" if x is not None and len(shape) == 2 and is_fortran(x) else "C"
        new = cl_array.zeros if zeros else cl_array.empty
        return new(queue, shape, dtype, order=order)
    if not isinstance(y, cl_array.Array):
        raise TypeError(f"{what} must be a pyopencl array when the input is one, got "
                        f"{type(y).__name__}")
    check_output(y, shape, what, dtype)
    if y.context != device.context:
        raise ValueError(f"{what} lives in another OpenCL context than the matrix's device")
    if y.offset or not y.flags.forc:
        raise ValueError(f"{what} must be a contiguous array without offset (it is updated "
                         "in place)")
    wait_for_other_queue(y, queue)
    return y


def wait_for_other_queue(a: cl_array.Array, queue: object) -> None:
    """Finish the queue of an array made on another queue of the device's context (a user's
    queue), so that the product, enqueued on ``queue``, sees its data."""
    if a.queue is not None and a.queue != queue:
        a.queue.finish()


def is_fortran(a: np.ndarray | cl_array.Array) -> bool:
    """Column-major and not also row-major (a single column counts as row-major)."""
    return bool(a.flags.f_contiguous and not a.flags.c_contiguous)


def contiguous(a: np.ndarray) -> np.ndarray:
    """``a`` itself when C- or F-contiguous, else a C-ordered copy."""
    return a if a.flags.c_contiguous or a.flags.f_contiguous else np.ascontiguousarray(a)


def element_strides(a: cl_array.Array) -> tuple[int, ...]:
    """Strides in elements (a 1-D array counts as one column)."""
    strides = tuple(s // a.dtype.itemsize for s in a.strides)
    return strides if len(strides) == 2 else (1, a.shape[0])


class Operands:
    """The input and output of one product, checked (in the constructor, before any device
    work) and brought to the device (:meth:`to_device`, under the matrix's lock).

    numpy operands on a device whose buffers live in host memory (a CPU) are used in place where
    :func:`clspmv.host_buffers.usable` allows: x read where it lies, y written where it lies (a
    new y allocated aligned); otherwise they are copied to the device and the result copied back
    by :meth:`result` (into the given y, updated in place). pyopencl operands stay on the device.
    :attr:`transfers` records which path each operand took. ``keep_y``: the product writes part
    of y only (a block), so a given y is uploaded also when beta == 0 and a new one starts as
    zeros.
    """

    def __init__(self, x: object, y: object, shapes: tuple[tuple[int, ...], tuple[int, ...]],
                 names: tuple[str, str], device: Device, dtype: np.dtype,
                 keep_y: bool) -> None:
        in_shape, self.out_shape = shapes
        self.device, self.dtype, self.keep_y = device, dtype, keep_y
        self.on_device = isinstance(x, cl_array.Array)
        self.x_dev: cl_array.Array | host_buffers.HostVector | None = None
        self.y_dev: cl_array.Array | host_buffers.HostVector | None = None
        self.y_host: np.ndarray | None = None
        self.y_in_place = False
        self.events: list = []
        self.transfers: dict[str, str] = {}
        """How x and y reached the kernels: ``"in place"``, ``"copied"`` or ``"device"``
        (:mod:`clspmv.host_buffers`)."""
        self.in_bytes = math.prod(in_shape) * dtype.itemsize
        if self.on_device:
            try:
                self.x_dev = device_input(x, in_shape, names[0], device, dtype)
                self.y_dev = device_output(y, self.out_shape, names[1], self.x_dev, device,
                                           dtype, keep_y)
                if self.x_dev is not None and self.x_dev is x \
                        and x.base_data == self.y_dev.base_data:
                    # x and y in one buffer: the kernels would read x while writing y
                    self.x_dev = x.copy(queue=device.queue)
            except cl.Error as err:  # a copy, conversion or new y the driver refuses
                raise self._refused(err) from err
            self.transfers = {"x": host_buffers.DEVICE, "y": host_buffers.DEVICE}
        else:
            self.x_host = host_input(x, in_shape, names[0], dtype)
            self.y_host = host_output(y, self.out_shape, names[1], dtype)
            if self.y_host is not None and np.may_share_memory(self.x_host, self.y_host):
                self.x_host = self.x_host.copy(order="K")  # the kernels read x while writing y
            if self.x_host.size:
                buffer_bytes(in_shape, dtype, names[0], device)
            if not self.empty:
                buffer_bytes(self.out_shape, dtype, names[1], device)
            self.x_in_place = host_buffers.usable(self.x_host, dtype, device)
            own = isinstance(x, np.ndarray) and np.may_share_memory(self.x_host, x)
            self.transfers["x"] = (host_buffers.IN_PLACE if self.x_in_place and own
                                   else host_buffers.COPIED)

    @property
    def empty(self) -> bool:
        """True when the output has no entries (nothing to launch)."""
        return 0 in self.out_shape

    def to_device(self, beta: np.generic, pool: host_buffers.OutputPool | None = None) -> None:
        """Bring numpy operands to the device: buffers on their memory where they can be used in
        place, else copies (y only where the product reads it). A new y takes its memory from
        ``pool`` (:class:`clspmv.host_buffers.OutputPool`) where one is given.
        :class:`DeviceError` where the driver refuses a buffer (out of device memory)."""
        if self.on_device:
            return
        try:
            self._transfer(beta, pool)
        except cl.Error as err:  # MemoryError, or LogicError for a size the driver refuses
            raise self._refused(err) from err

    def _refused(self, err: cl.Error) -> DeviceError:
        return DeviceError(
            f"the OpenCL driver of {self.device.name} refused the buffers of the product "
            f"({self.in_bytes} bytes for the input, "
            f"{math.prod(self.out_shape) * self.dtype.itemsize} bytes for the output): {err}; "
            "free device memory or multiply in parts")

    def _transfer(self, beta: np.generic, pool: host_buffers.OutputPool | None) -> None:
        device, queue, x = self.device, self.device.queue, self.x_host
        if not x.size:
            self.x_dev = None
        elif self.x_in_place:
            self.x_dev = host_buffers.wrap(device, x, writable=False)
        else:
            self.x_dev = cl_array.to_device(queue, x)
        order = "F" if x.ndim == 2 and is_fortran(x) else "C"
        y = self.y_host
        if y is None and device.host_memory:
            y = host_buffers.aligned_empty(self.out_shape, self.dtype, order, device,
                                           zeros=self.keep_y, pool=pool)
        if y is not None and host_buffers.usable(y, self.dtype, device):
            self.y_host, self.y_in_place = y, True
            self.y_dev = host_buffers.wrap(device, y, writable=True)
            self.transfers["y"] = host_buffers.IN_PLACE
            return
        self.transfers["y"] = host_buffers.COPIED
        if y is not None and (beta != 0 or self.keep_y):
            self.y_dev = cl_array.to_device(queue, contiguous(y))
        else:
            new = cl_array.zeros if self.keep_y else cl_array.empty
            self.y_dev = new(queue, self.out_shape, self.dtype, order=order)

    def launched(self, events: list) -> None:
        """After the kernels: a device output made on another queue of the context (a user's)
        gets the product's last event, so that pyopencl operations on it wait for the product.
        :meth:`result` waits for ``events``."""
        self.events = events
        if self.on_device and events and self.y_dev.queue not in (None, self.device.queue):
            self.y_dev.add_event(events[-1])

    def result(self) -> Array:
        """The product's output: the device array, or the numpy y (updated) or a new array.
        Returns only once the product's kernels are done."""
        if self.on_device:
            return self.y_dev
        if self.y_dev is None:  # nothing was launched: an empty output
            return self.y_host if self.y_host is not None else np.zeros(self.out_shape,
                                                                         self.dtype)
        if self.y_in_place:
            host_buffers.sync_back(self.device, self.y_dev, self.events)
            return self.y_host
        result = self.y_dev.get(self.device.queue)
        if self.y_host is None:
            return result
        self.y_host[...] = result
        return self.y_host
