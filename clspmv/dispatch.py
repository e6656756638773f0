"""How a product runs on device arrays once its arguments are checked: several right-hand sides
through a format's block kernel or column by column, the transposed copy of a matrix, and the
rule for which column count a column-mapped matrix has. :class:`clspmv.DeviceMatrix` decides
which format and kernel a product takes and calls these.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp

from .arguments import element_strides
from .canonical import canonical_csr
from .device import Device
from .errors import UnsuitableFormatError
from .formats import Format, convert
from .formats.base import Strides
from .precision import Precision
from .vectors import DeviceVectors

FALLBACK_TRANSPOSE_FORMAT = "csr-vector"
"""Format of the transposed copy when the matrix's own format refuses the transpose."""


def global_columns(fmt: Format, transposed_storage: bool, n_cols: int | None) -> int | None:
    """The column count of a matrix whose format has a column map (``n_cols``, at least one past
    its largest entry, which is the default); None for a format without one (``n_cols`` must
    then be None)."""
    if fmt.column_map is None:
        if n_cols is not None:
            raise ValueError("n_cols is only for a matrix with a column_map")
        return None
    if transposed_storage:
        raise ValueError("a column map needs CSR storage: pass a CSR matrix, not CSC")
    least = int(fmt.column_map.max()) + 1 if fmt.column_map.size else 0
    if n_cols is None:
        return least
    if isinstance(n_cols, bool) or not isinstance(n_cols, (int, np.integer)) or n_cols < least:
        raise ValueError(f"n_cols must be an int of at least {least} (one past the largest "
                         f"entry of column_map), got {n_cols!r}")
    return int(n_cols)


def launch_columns(fmt: Format, use_t: bool, vectors: DeviceVectors, queue: cl.CommandQueue,
                   X: cl_array.Array | None, Y: cl_array.Array, alpha: np.generic,
                   beta: np.generic, row0: int = 0, keep_y: bool = False) -> list[cl.Event]:
    """Y = alpha op(A) X + beta Y: the block kernel where the format has one, else one product
    per column through contiguous work vectors (``keep_y``: Y's entries outside the block are
    kept, so each column is copied in also when beta == 0)."""
    k = Y.shape[1]
    launch = fmt.launch_t if use_t else fmt.launch
    if k == 1:  # one column is a contiguous vector in either order
        return launch(queue, X.data if X is not None else None, Y.data, alpha, beta, row0)
    if not use_t and fmt.has_matmat:
        x_buf = X.data if X is not None else Y.data  # without columns A has no entries
        x_row, x_col = element_strides(X) if X is not None else (0, 0)
        strides = Strides(k, x_row, x_col, *element_strides(Y))
        return fmt.launch_matmat(queue, x_buf, Y.data, strides, alpha, beta, row0)
    dtype = vectors.dtype
    n_in, m_out = (X.shape[0] if X is not None else 0), Y.shape[0]
    x_col = cl_array.empty(queue, n_in, dtype) if n_in else None
    y_col = cl_array.empty(queue, m_out, dtype)
    (x_row, x_step), (y_row, y_step) = (element_strides(X) if X is not None else (0, 0),
                                        element_strides(Y))
    events: list[cl.Event | None] = []
    for j in range(k):
        if x_col is not None:
            events.append(vectors.copy_strided(n_in, X, j * x_step, x_row, x_col, 0, 1))
        if beta != 0 or keep_y:
            events.append(vectors.copy_strided(m_out, Y, j * y_step, y_row, y_col, 0, 1))
        events += launch(queue, x_col.data if x_col is not None else None, y_col.data,
                         alpha, beta, row0)
        events.append(vectors.copy_strided(m_out, y_col, 0, 1, Y, j * y_step, y_row))
    return [e for e in events if e is not None]


def transposed_copy(fmt: Format, device: Device, precision: Precision) -> Format:
    """The transpose of ``fmt``'s stored arrays, uploaded in the same format with its default
    parameters, or in :data:`FALLBACK_TRANSPOSE_FORMAT` where that format refuses A^T (read back,
    transposed on the host through scipy; nothing stays on the host)."""
    if fmt.column_map is not None:
        raise ValueError("a matrix with a column_map has no transposed copy: its transpose "
                         "products run the format's own transpose kernel (method='atomic')")
    rows, cols, vals = fmt.to_coo(fmt.download())
    m, n = fmt.shape
    csr_t = canonical_csr(sp.coo_matrix((vals, (cols, rows)), shape=(n, m)), fmt.dtype)
    try:
        copy = convert(csr_t, fmt.name, fmt.layout, precision, owned=True)
    except UnsuitableFormatError:
        copy = convert(csr_t, FALLBACK_TRANSPOSE_FORMAT, fmt.layout, precision, owned=True)
    del csr_t
    copy.upload(device)
    return copy
