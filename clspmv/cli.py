"""The ``clspmv`` command: argument parsing only; the work is done by the library.

    clspmv devices                 the OpenCL devices found
    clspmv stats FILE...           row-length statistics of Matrix Market files
    clspmv demo [options]          every format on a generated 2-D Poisson matrix, checked and timed

Exit codes: 0 success, 1 no device / a device error / a failed check, 2 bad arguments or an
unreadable matrix file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tabulate import tabulate

from . import demo, io
from .device import devices, select_device
from .errors import DeviceError, MatrixFormatError
from .matrix import FORMATS
from .stats import format_table, stats


def _error(message: object, code: int) -> int:
    print(f"clspmv: error: {message}", file=sys.stderr)
    return code


def _matrix_name(path: str) -> str:
    """The file name without ``.mtx`` / ``.mtx.gz``."""
    name = Path(path).name
    for suffix in (".gz", ".mtx"):
        name = name.removesuffix(suffix)
    return name


def _formats(text: str) -> list[str]:
    """``all`` or a comma-separated list of format names."""
    if text.strip() == "all":
        return list(FORMATS)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in FORMATS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown format{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown)) or repr(text)}; "
            f"choose 'all' or from {', '.join(FORMATS)}"
        )
    return names


def _grid_size(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        k = 0
    if k < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return k


# -- subcommands --------------------------------------------------------------------------------
def cmd_devices(args: argparse.Namespace) -> int:
    found = devices()
    if not found:
        select_device()  # raises the DeviceError that says what to install
    print(tabulate([d.as_row() for d in found], headers="keys"))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    rows = []
    for path in args.files:
        try:
            A = io.read(path)
        except OSError as err:
            return _error(f"{path}: {err.strerror or err}", 2)
        rows.append(stats(A).as_row(_matrix_name(path)))
    print(format_table(rows))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    device = select_device(args.device)
    A = demo.poisson2d(args.size)
    print(f"device: {device}")
    print(f"matrix: 2-D Poisson on a {args.size}x{args.size} grid, {A.shape[0]} rows, "
          f"{A.nnz} entries, {args.dtype}; kernel time is the median of {demo.REPEATS} products")
    results = demo.run(A, args.format, device, args.dtype)
    print(tabulate([r.as_row() for r in results], headers="keys", missingval="",
                   floatfmt=("", ".2f", ".3f", ".2f", ".1e", "")))
    failed = [r for r in results if not r.ok]
    if failed:
        names = ", ".join(r.format for r in failed)
        return _error(f"relative error above {failed[0].tolerance:g} for {names}", 1)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clspmv",
        description="Sparse matrix-vector products on OpenCL devices.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("devices", help="list the OpenCL devices",
                       description="List every OpenCL device with the facts clspmv uses.")
    p.set_defaults(run=cmd_devices)

    p = sub.add_parser("stats", help="row-length statistics of Matrix Market files",
                       description="Row-length statistics (Table I of the ELLPACK-R paper) of "
                                   "Matrix Market files (.mtx or .mtx.gz).")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(run=cmd_stats)

    p = sub.add_parser("demo", help="run every format on a generated 2-D Poisson matrix",
                       description="Convert a generated 2-D Poisson matrix to each format, check "
                                   "one product against scipy and time "
                                   f"{demo.REPEATS} products with the kernels' profiling events.")
    p.add_argument("--device", metavar="SPEC", default=None,
                   help="'gpu', 'cpu', 'P:D' or a substring of the platform or device name "
                        "(default: $CLSPMV_DEVICE, $PYOPENCL_CTX, else the first GPU, else CPU)")
    p.add_argument("--format", type=_formats, default=list(FORMATS), metavar="F[,F...]|all",
                   help=f"formats to run (default: all): {', '.join(FORMATS)}")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                   help="value type (default: float32)")
    p.add_argument("--size", type=_grid_size, default=300, metavar="N",
                   help="grid side: the matrix has N*N rows (default: 300)")
    p.set_defaults(run=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except MatrixFormatError as err:
        return _error(err, 2)
    except DeviceError as err:
        return _error(err, 1)


if __name__ == "__main__":
    sys.exit(main())
