"""A device matrix as plain data, and back: what a pickle holds, and what
:meth:`clspmv.DeviceMatrix.copy` and :meth:`~clspmv.DeviceMatrix.astype` convert and upload again.

:func:`host_state` reads a matrix back into numpy arrays, names and numbers (no clspmv class
appears in it): the stored matrix as CSR, its format, the parameters its conversion was asked for
(:attr:`clspmv.formats.Format.requested`: converting again with them makes the same layout on the
same device and value type, and derives the others anew for another one), its work-group size,
precision, column map and device. :func:`rebuild` converts and uploads such a state again;
:func:`restore`, the function a pickle names, checks it first (:func:`check_state`): a state
that is not one clspmv wrote (keys missing or unknown, wrong types or shapes, corrupt arrays, an
unknown format or parameter) raises :class:`~clspmv.errors.StoredMatrixError` saying what is wrong.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .canonical import canonical_csr, check_compressed
from .device import Device, devices, select_device
from .errors import ClspmvError, ClspmvWarning, StoredMatrixError
from .formats import FORMAT_CLASSES, Format, convert, parameter_names
from .model.order_probe import ensure_ell_order
from .precision import NAMES, Precision, check_real

STATE_VERSION = 1
"""Version of the pickled state (:func:`host_state`)."""

STATE_KEYS = ("version", "shape", "data", "indices", "indptr", "format", "params",
              "work_group_size", "precision", "transposed_storage", "column_map", "n_cols", "nnz",
              "device")
"""The entries of a state, every one required."""


def device_spec(device: Device) -> dict[str, str]:
    """What identifies a device across processes: platform and device names, type."""
    return {"platform": device.platform, "name": device.name, "type": device.type}


def find_device(spec: dict[str, str]) -> Device:
    """The device of a :func:`device_spec` if present (same platform and name), else the default
    device with a :class:`~clspmv.errors.ClspmvWarning` naming both."""
    for dev in devices():
        if dev.platform == spec["platform"] and dev.name == spec["name"]:
            return dev
    dev = select_device()
    warnings.warn(f"the matrix was stored from {spec['name']} ({spec['platform']}), which is not "
                  f"present here; it goes to the default device {dev.name} ({dev.platform})",
                  ClspmvWarning, stacklevel=4)
    return dev


def host_state(fmt: Format, transposed_storage: bool, n_cols: int | None, nnz: int,
               device: Device) -> dict[str, object]:
    """A matrix's stored arrays read back into plain numpy arrays, with the names and numbers
    that :func:`rebuild` needs (see the module docstring)."""
    rows, cols, vals = fmt.to_coo(fmt.download())
    stored = sp.csr_matrix((vals, (rows, cols)), shape=fmt.shape, dtype=fmt.dtype)
    stored.sum_duplicates()
    return {
        "version": STATE_VERSION,
        "shape": tuple(fmt.shape),
        "data": stored.data, "indices": stored.indices, "indptr": stored.indptr,
        "format": fmt.name,
        "params": dict(fmt.requested),
        "work_group_size": fmt.layout.work_group_size,
        "precision": Precision(fmt.dtype, fmt.accumulate).name,
        "transposed_storage": transposed_storage,
        "column_map": fmt.column_map,
        "n_cols": n_cols,
        "nnz": nnz,
        "device": device_spec(device),
    }


def _damaged(problem: str) -> StoredMatrixError:
    return StoredMatrixError(f"the stored device matrix is damaged: {problem}; store it again from "
                       "a DeviceMatrix (pickle.dumps(M))")


def _is_int(value: object, least: int = 0) -> bool:
    return (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
            and value >= least)


def check_state(state: object) -> None:
    """:class:`StoredMatrixError` naming what is wrong unless ``state`` is a state
    :func:`host_state` could have written: every key of :data:`STATE_KEYS` and no other, of
    the types it writes, a known format and precision, parameters the format has, consistent
    CSR arrays of real values.
    Parameter values are checked by the conversion itself (:func:`rebuild`)."""
    if not isinstance(state, dict):
        raise _damaged(f"its state is a {type(state).__name__}, not a dict")
    if state.get("version") != STATE_VERSION:
        raise StoredMatrixError(f"a device matrix stored by another clspmv (state version "
                          f"{state.get('version')!r}, this one reads {STATE_VERSION})")
    missing = [key for key in STATE_KEYS if key not in state]
    unknown = sorted(map(str, set(state) - set(STATE_KEYS)))
    if missing or unknown:
        raise _damaged(", ".join(
            ([f"it lacks {', '.join(missing)}"] if missing else [])
            + ([f"it holds unknown entries {', '.join(unknown)}"] if unknown else [])))
    shape = state["shape"]
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2 and all(map(_is_int, shape))):
        raise _damaged(f"shape is {shape!r}, not two non-negative ints")
    fmt = state["format"]
    if not isinstance(fmt, str) or fmt not in FORMAT_CLASSES:
        raise _damaged(f"unknown format {fmt!r} (this clspmv has {', '.join(FORMAT_CLASSES)})")
    params = state["params"]
    if not isinstance(params, dict):
        raise _damaged(f"params is a {type(params).__name__}, not a dict")
    foreign = sorted(map(str, set(params) - set(parameter_names(fmt))))
    if foreign:
        raise _damaged(f"params {', '.join(foreign)} are not parameters of format {fmt!r}")
    if state["precision"] not in NAMES:
        raise _damaged(f"precision is {state['precision']!r}, not one of {', '.join(NAMES)}")
    checks = {"work_group_size": _is_int(state["work_group_size"], 1),
              "transposed_storage": isinstance(state["transposed_storage"], (bool, np.bool_)),
              "n_cols": state["n_cols"] is None or _is_int(state["n_cols"]),
              "nnz": _is_int(state["nnz"]),
              "column_map": state["column_map"] is None
              or isinstance(state["column_map"], np.ndarray)}
    wrong = [key for key, ok in checks.items() if not ok]
    if wrong:
        raise _damaged(", ".join(f"{key} is {state[key]!r}" for key in wrong))
    spec = state["device"]
    if not (isinstance(spec, dict)
            and all(isinstance(spec.get(key), str) for key in ("platform", "name"))):
        raise _damaged(f"device is {spec!r}, not a dict naming a platform and a device")
    arrays = {key: state[key] for key in ("data", "indices", "indptr")}
    odd = [key for key, a in arrays.items() if not isinstance(a, np.ndarray) or a.ndim != 1]
    if odd:
        raise _damaged(f"{', '.join(odd)} must be 1-D numpy arrays")
    try:
        check_real(arrays["data"].dtype, "data")
        check_compressed(arrays["indptr"], arrays["indices"], arrays["data"].size, tuple(shape),
                         "state")
    except (TypeError, ValueError) as err:
        raise _damaged(str(err)) from err


def rebuild(cls: type, state: dict[str, object], device: Device | None = None,
            precision: object = None) -> object:
    """Convert and upload a :func:`host_state` again (one :func:`host_state` made, or one
    :func:`check_state` passed: its CSR arrays are not checked again), to ``device`` (None: the
    device the state names if present, else the default with a warning), in ``precision``
    (None: the state's), with the parameters the state's conversion was asked for; the others
    are derived as :meth:`clspmv.DeviceMatrix.from_scipy` derives them. ValueError or TypeError
    (saying so) where those parameters do not suit the precision or device."""
    dev = find_device(state["device"]) if device is None else device
    prec = Precision.of(state["precision"] if precision is None else precision)
    dev.require(prec)
    stored = sp.csr_matrix((state["data"], state["indices"], state["indptr"]),
                           shape=tuple(state["shape"]))
    csr = canonical_csr(stored, prec.name, checked=True)  # by check_state, or host_state's
    name, params, wg = state["format"], state["params"], state["work_group_size"]
    ensure_ell_order(dev, name, params)
    fmt_cls = FORMAT_CLASSES[name]
    try:
        layout = fmt_cls.layout_for(dev, wg if wg <= dev.max_work_group_size else None)
        fmt = convert(csr, name, layout, prec, column_map=state["column_map"], owned=True,
                      **params)
    except (TypeError, ValueError) as err:
        given = ", ".join(f"{key}={value!r}" for key, value in params.items()) or "none"
        raise type(err)(f"format {name!r} with the parameters it was made with ({given}) does "
                        f"not convert again in {prec.name} on {dev.name}: {err}; convert the "
                        "matrix with DeviceMatrix.from_scipy and other parameters") from err
    return cls.upload(fmt, dev, transposed_storage=bool(state["transposed_storage"]),
                      n_cols=state["n_cols"], nnz=state["nnz"])


def restore(cls: type, state: object) -> object:
    """Unpickle a device matrix (the function its ``__reduce__`` names): :func:`check_state`,
    then :func:`rebuild`; a state the conversion refuses is a :class:`ClspmvError` too."""
    check_state(state)
    try:
        return rebuild(cls, state)
    except (TypeError, ValueError) as err:
        if isinstance(err, ClspmvError):  # IndexOverflowError, UnsuitableFormatError
            raise
        raise StoredMatrixError(f"the stored device matrix does not load: {err}") from err
