"""The ``clspmv`` command: argument parsing only; the work is done by the library (above
400 lines because it is one thing: every subcommand's options and the one error handler).

    clspmv devices                 the OpenCL devices found (* the default)
    clspmv doctor                  what works here: devices, baselines, calibration; the fixes
    clspmv stats MATRIX...         row-length statistics (files, directories, gen:, ss:)
    clspmv bench [MATRIX...]       benchmark formats and baselines; results.json, report.md, plots
    clspmv report FILE.json...     rebuild report.md and plots from saved (and merged) results

Every failure ends in one line ``clspmv: error: <the problem; the fix>`` on stderr, never a
traceback. Exit codes: 0 success, 1 no device / a device error / out of memory, 2 bad
arguments, an unreadable matrix or results file, an output folder that holds another run or
cannot be written, or a benchmark that made no record, 130 interrupted (one line ``clspmv:
interrupted``, also while it starts: :mod:`clspmv.entry`; the results measured so far are
kept), 141 the reader of the output went away (``clspmv ... | head``: quietly, as a program
killed by SIGPIPE).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shlex
import socket
import sys
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path

import numpy as np
from tabulate import tabulate

from . import __version__
from . import cli_values as values
from .device import Device, devices, select_device
from .errors import ClspmvError, DeviceError
from .exit_codes import INTERRUPTED, interrupted, output_closed
from .matrix import FORMATS
from .row_stats import format_table, legend, stats


def _error(message: object, code: int) -> int:
    print(f"clspmv: error: {message}", file=sys.stderr)
    return code


DEFAULT_DEVICE = ("$CLSPMV_DEVICE, else $PYOPENCL_CTX, else the first GPU, else the fastest "
                  "CPU implementation that clspmv calibrate or doctor compared, else the first "
                  "CPU; the Oclgrind simulator only when named")
"""The rule of the default device (:func:`clspmv.device.select_device`), as the help says it."""

DTYPES: dict[str, list[np.dtype | str]] = {
    "float32": [np.dtype(np.float32)], "float64": [np.dtype(np.float64)],
    "both": [np.dtype(np.float64), np.dtype(np.float32)],
    "mixed": ["mixed"],  # float32 values summed in float64, against the float32 baselines
    "all": [np.dtype(np.float64), np.dtype(np.float32), "mixed"],
}


# -- subcommands --------------------------------------------------------------------------------
def cmd_devices(args: argparse.Namespace) -> int:
    found = devices()
    if not found:
        select_device()  # raises the DeviceError that says what to install
    try:
        default: object = select_device()
    except DeviceError as err:  # a bad $CLSPMV_DEVICE: list the devices anyway
        default, note = None, f"no default device: {err}".splitlines()[0]
    else:
        note = f"* the default device ({DEFAULT_DEVICE}); choose another with --device SPEC"
    print(tabulate([{**d.as_row(), "default": "*" if d is default else ""} for d in found],
                   headers="keys"))
    print(f"\n{note}")
    return 0 if default is not None else 1


def cmd_doctor(args: argparse.Namespace) -> int:
    from . import doctor

    return doctor.main(["--require-device"] if args.require_device else [])


def cmd_stats(args: argparse.Namespace) -> int:
    from .bench import sources

    rows = [stats(source.load()).as_row(source.name)
            for source in sources.resolve_all(args.files, progress=False)]
    print(f"{format_table(rows)}\n\n{legend()}")
    return 0


def default_out_dir() -> Path:
    """``reports/<date>-<host>/`` below the current folder: the first choice of a run's new
    folder (then ``-2``, ``-3``, ...: :func:`clspmv.report.folder.new_folder`)."""
    return Path("reports") / f"{date.today().isoformat()}-{socket.gethostname()}"


def bench_folder(out: str | None, force: bool) -> Path:
    """The folder of a new run: ``out`` if it holds no other run (or ``force``: then their files
    are removed first), else a new folder below :func:`default_out_dir`."""
    from .report import folder

    return folder.claim(Path(out), force) if out else folder.new_folder(default_out_dir())


def cmd_bench(args: argparse.Namespace) -> int:
    from . import report
    from .bench import metadata, plan, runner, sources, suites

    for option, given in (("--modes", args.modes), ("--partition", args.partition)):
        if given and not args.distributed:
            return _error(f"{option} is an option of --distributed; add --distributed or leave "
                          f"{option} out", 2)
    try:
        specs = list(suites.suite(args.suite)) if args.suite else []
    except ValueError as err:  # the real suite without the shared matrix folder
        return _error(err, 2)
    specs += args.matrices
    if not specs:
        specs = list(suites.suite("demo"))
    plan_sources = sources.resolve_all(specs, progress=not args.quiet)
    dist = None
    if args.distributed:  # one device per rank, only the distributed product, rank 0 writes
        from .bench import mpirun as dist
        try:
            if args.max_seconds:
                raise ValueError("--max-seconds cannot be used with --distributed (each rank "
                                 "would stop on its own clock)")
            dist_formats = dist.formats_pair(args.formats)
            dist_modes = dist.modes(args.modes) if args.modes else dist.all_modes()
            dist_partition = dist.partition(args.partition)
            chosen = [dist.rank_device(args.device)]
        except ValueError as err:
            return _error(err, 2)
        args.quiet = args.quiet or not dist.is_root()
    elif args.device and "all" in args.device:
        chosen = [d for d in devices() if not d.is_simulator]  # a simulator only when named
        if not chosen:
            select_device()  # raises the DeviceError that says what to install
    else:
        chosen = [select_device(spec) for spec in (args.device or [None])]
    chosen = list({id(d): d for d in chosen}.values())
    todo = plan.Plan(
        sources=plan_sources, devices=chosen, formats=[] if dist else args.formats,
        dtypes=DTYPES[args.dtype], baselines=[] if dist else args.baselines,
        repeat=args.repeat, warmup=args.warmup,
        mkl_threads=args.mkl_threads, max_seconds=args.max_seconds, seed=args.seed,
        progress=not args.quiet, suite=args.suite or (None if args.matrices else "demo"),
        transpose=args.transpose, matmat=args.matmat, solvers=args.solver,
        solver_iterations=args.solver_iterations, sweep=args.sweep,
        distributed=dist_modes if dist else [],
        distributed_formats=dist_formats if dist else None,
        distributed_partition=dist_partition if dist else "auto",
        selection=(args.formats == "all" and not dist) if args.selection is None
        else args.selection, trial=args.trial)
    command = shlex.join(["clspmv", *args.argv])
    meta = metadata.run_meta(todo, command)
    # the folder last, once nothing else can refuse the run: no empty folder of a failed start
    if dist:
        out = dist.on_root("preparing the output folder",
                           lambda: bench_folder(args.out, args.force))
    else:
        out = bench_folder(args.out, args.force)
    results = dist.results_for(out, meta) if dist else runner.Results(out, meta)
    if args.note:
        results.meta["note"] = args.note
    try:
        runner.Runner(todo, results).run()
        if not getattr(results, "writes", True):  # --distributed: ranks other than 0
            return 0
        if not results.records:  # nothing was measured: no report, and a failure
            from .report import folder  # no run to keep: the folder is free for the next one
            folder.remove(folder.files_of(out))
            with contextlib.suppress(OSError):  # only where nothing else is in it
                out.rmdir()
            return _error("no record was made, so no report was written; not run: "
                          + "; ".join(results.meta["not_run"]), 2)
        path = report.write(out, [results.meta], [r.as_dict() for r in results.records])
    except KeyboardInterrupt:
        _end_progress_bars()
        print(f"clspmv: interrupted; the {len(results.records)} records measured so far are "
              f"in {results.json_path} (clspmv report {results.json_path} makes a report)",
              file=sys.stderr)
        return INTERRUPTED
    counts: dict[str, int] = {}
    for r in results.records:
        counts[r.status] = counts.get(r.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    print(f"{len(results.records)} records ({summary}) in {results.json_path} and "
          f"{results.csv_path}; report: {path}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from . import report
    from .report import folder

    files = [Path(f) for f in args.files]
    merging = len(files) > 1
    if merging and not args.out:
        return _error(f"merging {len(files)} results files makes a new results.json: name a "
                      "folder for it with --out DIR", 2)
    metas, records = report.load(files)
    own = files[0] if files[0].is_dir() else files[0].parent  # the first run's folder
    out = Path(args.out) if args.out else own
    if merging or out.resolve() != own.resolve():  # not the run's own folder
        folder.claim(out, args.force)
    else:  # its results stay; only the report is made anew
        folder.clear_report(out)
    if merging:  # the merged records beside the merged report
        report.save_merged(out, metas, records)
    try:
        path = report.write(out, metas, records)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        # what read_json checks leaves out: the fields of an operation, read where it is drawn
        return _error(f"cannot make a report of {', '.join(args.files)}: a record or the meta "
                      f"holds a field of another kind than clspmv writes ({type(err).__name__}: "
                      f"{err}); rerun clspmv bench, or repair the file", 2)
    print(f"{len(records)} records from {len(metas)} run{'s' if len(metas) != 1 else ''}; "
          f"report: {path}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .cache_files import where_stored
    from .ell_order import described, order_path
    from .model import store

    if args.json and not args.show or args.show and (args.force or args.quick):
        return _error("--show prints what is stored (--json: as JSON) and measures nothing; "
                      "--force and --quick measure: use one or the other", 2)
    device = select_device(args.device)
    path = store.calibration_path(device)
    if args.show:  # what is stored, never a measurement
        cal = store.load(device)
        if cal is None:
            return _error(f"no calibration stored for {device.name}; `clspmv calibrate "
                          f"--device {spec(device)}` measures it", 1)
        if args.json:
            import json

            print(json.dumps(cal.to_json(), indent=1, sort_keys=True))
        else:
            print(store.describe(cal, path))
        return 0
    wanted = "quick" if args.quick else "measured"
    cal = None if args.force else store.load(device)
    if cal is not None and cal.kind in ("measured", wanted):  # a full one serves both
        print(f"calibration of {device.name} ({store.KIND_NAMES[cal.kind]}): {path}; --force "
              "measures it again, --show prints it")
        return 0
    cal = store.calibration(device, force=True, full=not args.quick, progress=not args.quiet)
    now = store.load(device)
    if cal.kind == "quick" and now is not None and now.kind == "measured":  # never replaced
        where = (f"kept for this process only: the full calibration stored in {path} stays "
                 "(it is always taken over a quick one)")
    else:
        where = str(path) if path.is_file() else "kept in memory only (see the warning)"
    print(f"calibrated {device.name} ({store.KIND_NAMES[cal.kind]}) in {cal.seconds:.1f} s: "
          f"{where}")
    if cal.ell_row_major_width:
        print(f"{described(store.ell_widths(cal))} on it (measured first; "
              f"{where_stored(order_path(device))})")
    if device.type == "cpu":  # the default device follows the fastest CPU implementation
        from .implementations import compare_and_remember, finding

        for comparison in compare_and_remember():
            if device in {imp.device for imp in comparison.ranked}:
                print(f"{finding(comparison)['detail']}")
    return 0


def spec(device: Device) -> str:
    """How ``--device`` names ``device``: ``P:D``."""
    return f"{device.index[0]}:{device.index[1]}"


def build_parser() -> argparse.ArgumentParser:
    from .bench.generators import GENERATORS  # the bench's registries (the CLI sits above it)
    from .bench.suites import SUITES

    generator_names = ", ".join(GENERATORS)

    parser = argparse.ArgumentParser(
        prog="clspmv",
        description="Sparse matrix-vector products on OpenCL devices.",
    )
    parser.add_argument("--version", action="version", version=f"clspmv {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("devices", help="list the OpenCL devices",
                       description="List every OpenCL device with the facts clspmv uses.")
    p.set_defaults(run=cmd_devices)

    p = sub.add_parser("doctor", help="check devices, baselines and calibration; say the fixes",
                       description="List the OpenCL platforms and devices (does each build a "
                                   "kernel? fp64?), the baselines found (scipy, MKL, "
                                   "cupy/CUDA) and the calibration state, with a one-line fix "
                                   "for each problem.")
    p.add_argument("--require-device", action="store_true",
                   help="only check the devices; exit 1 unless one other than the simulator "
                        "builds kernels")
    p.set_defaults(run=cmd_doctor)

    p = sub.add_parser("stats", help="row-length statistics of matrices",
                       description="Row-length statistics (Table I of Vázquez, Fernández and "
                                   "Garzón's ELLPACK-R paper) of Matrix Market files (.mtx or "
                                   ".mtx.gz; a directory: every such file in it), generated "
                                   f"(gen:NAME:key=val,...; generators: {generator_names}) or "
                                   "SuiteSparse (ss:GROUP/NAME) matrices, the MATRIX arguments "
                                   "of clspmv bench. The columns are explained below the table.")
    p.add_argument("files", nargs="+", metavar="MATRIX")
    p.set_defaults(run=cmd_stats)

    p = sub.add_parser(
        "bench", help="benchmark formats and baselines, write results and a report",
        description="Measure every format (or those chosen) on each matrix, device and value "
                    "type, with scipy, MKL (plain and optimised handles) and cuSPARSE "
                    "baselines in the same run; write "
                    "results.json, results.csv, report.md and plots. Without MATRIX and "
                    "--suite: the demo suite on the default device.")
    p.add_argument("matrices", nargs="*", metavar="MATRIX",
                   help="a .mtx/.mtx.gz file, a directory (its .mtx/.mtx.gz files), "
                        f"gen:NAME:key=val,... (generators: {generator_names}) or "
                        "ss:GROUP/NAME (SuiteSparse, downloaded once into the cache)")
    p.add_argument("--suite", default=None,
                   choices=tuple(SUITES),
                   help="a named list of generated matrices (default without MATRIX: demo)")
    p.add_argument("--device", action="extend", nargs="+", metavar="SPEC", default=None,
                   help="device(s): 'all' (every one but the simulator), 'gpu', 'cpu', 'P:D' "
                        "or a substring of the platform or device name (default: "
                        f"{DEFAULT_DEVICE})")
    p.add_argument("--formats", type=values.formats, default="all", metavar="all|auto|F[,F...]",
                   help=f"formats to run, any case (default: all): {', '.join(FORMATS)}; "
                        "auto: per matrix, the format the device's calibrated time model of "
                        "each format predicts fastest (format='auto' of from_scipy without "
                        "expected products, so no trial; --selection compares a trial too), "
                        "plus csr-scalar, the break-even reference")
    p.add_argument("--dtype", choices=tuple(DTYPES), default="both",
                   help="value type(s): both = float64 and float32 (default); mixed = float32 "
                        "values with float64 sums, compared with the float32 baselines; all = "
                        "float64, float32 and mixed")
    from .bench.registry import BASELINES

    p.add_argument("--baselines", type=values.baselines, default=list(BASELINES),
                   metavar=f"{','.join(BASELINES)}|none",
                   help="baselines measured on the same matrices (default: all of them; those "
                        "that cannot run are recorded as absent with the reason); mkl is "
                        "MKL's plain handle (sparse_dot_mkl: no hint, no mkl_sparse_optimize), "
                        "mkl-optimised the same routines on a handle given "
                        "mkl_sparse_set_mv_hint and mkl_sparse_optimize")
    p.add_argument("--repeat", type=values.positive_int, default=10, metavar="N",
                   help="timed products per measurement after warm-up (default: 10; fewer, at "
                        "least 3, when N products would take more than 10 s)")
    p.add_argument("--warmup", type=values.positive_int, default=2, metavar="N",
                   help="untimed products first (default: 2; more until they have taken "
                        "20 ms)")
    p.add_argument("--mkl-threads", type=values.positive_int, default=None, metavar="N",
                   help="threads of the MKL baselines, mkl and mkl-optimised (default: "
                        "MKL's, the number of cores)")
    p.add_argument("--max-seconds", type=values.positive_float, default=None, metavar="S",
                   help="time budget of the whole run: once spent, nothing new starts and what "
                        "is left is recorded as skipped (default: none)")
    p.add_argument("--transpose", action="store_true",
                   help="also A^T x of every format by both methods (atomic kernel; transposed "
                        "copy, with its one-time cost) and of the baselines (scipy A.T @ x, "
                        "MKL, cuSPARSE's transpose operation)")
    p.add_argument("--matmat", type=values.column_counts, default=[], metavar="K[,K...]",
                   help="also A X for these numbers of right-hand sides (e.g. 1,2,4,8,16,32,64), "
                        "row- and column-major, for the formats with a block kernel (others "
                        "when --formats names them) and the baselines")
    p.add_argument("--solver", type=values.solvers, default=[], metavar="cg",
                   help="also the time per iteration of this device-resident solver on every "
                        "format, against scipy's on the host (square matrices; CG needs them "
                        "symmetric positive definite)")
    p.add_argument("--solver-iterations", type=values.positive_int, default=100, metavar="N",
                   help="iterations of each solve with --solver: rtol = atol = 0, so exactly "
                        "N run (default: 100)")
    p.add_argument("--sweep", action="store_true",
                   help="also the kernel-parameter experiments of Ferez's 'Sparse "
                        "Matrix-Vector Product: OpenMP vs CUDA on Hybrid Platforms' on every "
                        "device: work-group sizes, work-items per row, unroll factors, row- "
                        "against column-major ELLPACK (clspmv/bench/sweep.py lists the grid)")
    p.add_argument("--selection", action=argparse.BooleanOptionalAction, default=None,
                   help="also the choice of format='auto' against every format measured: predicted "
                        "and measured times, the model's error (default: on with --formats "
                        "all)")
    p.add_argument("--trial", action=argparse.BooleanOptionalAction, default=True,
                   help="with the selection, also format='auto' with a trial on the device (the "
                        "likeliest formats converted and timed there: clspmv.model.trial); "
                        "--no-trial leaves it out (default: on)")
    p.add_argument("--distributed", action="store_true",
                   help="run under mpiexec -n N: only the distributed product "
                        "(clspmv.distributed), per mode against the same code on one rank and "
                        "the model's prediction; one device per rank (--device local-rank: GPU "
                        "local_rank %% gpus); --formats: one format or local,non-local; rank 0 "
                        "writes the results")
    p.add_argument("--modes", default=None, metavar="vector,overlap,task",
                   help="modes of --distributed (default: all three)")
    p.add_argument("--partition", default=None, metavar="auto|time|nnz|rows|graph",
                   help="how --distributed cuts the rows (DistributedMatrix.from_scipy's "
                        "partition; default auto)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random x (default: 0)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output folder; refused if it holds another run, unless --force "
                        "(default: a new folder reports/<date>-<host>/, then -2, -3, ...)")
    p.add_argument("--force", action="store_true",
                   help="with --out: replace the run in that folder (its results, report and "
                        "plots are deleted before the new run starts)")
    p.add_argument("--note", default="", metavar="TEXT",
                   help="a remark on the conditions of the run, printed in the report's header")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=cmd_bench)

    p = sub.add_parser(
        "report", help="rebuild report.md and plots from results.json files",
        description="Rebuild report.md and the plots from saved results; several files "
                    "(from different machines) merge into one cross-device comparison, saved "
                    "as results.json and results.csv beside the report.")
    p.add_argument("files", nargs="+", metavar="RESULTS.json",
                   help="results.json (or .json.gz) files of clspmv bench, or their folders")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output folder; refused if it holds another run, unless --force "
                        "(default: the folder of the file; needed to merge several)")
    p.add_argument("--force", action="store_true",
                   help="with --out: replace the run or report in that folder (its files are "
                        "deleted first)")
    p.set_defaults(run=cmd_report)

    p = sub.add_parser(
        "calibrate", help="measure the device's full calibration for format='auto' (stored "
                          "in the user cache)",
        description="Measure the full calibration of a device: the micro-benchmarks that "
                    "instantiate the per-format time models of format='auto' (under a minute "
                    "on a GPU, up to 3 on a 2-core CPU), unless a full one is stored already, "
                    "and store it as JSON in the user cache directory (CLSPMV_CACHE_DIR "
                    "overrides). The first format='auto' on a device measures only the quick "
                    "calibration (seconds), which this replaces. --show prints what is stored "
                    "and measures nothing: exit code 1 when nothing is.")
    p.add_argument("--device", default=None, metavar="SPEC",
                   help="device spec as 'clspmv devices' lists them (default: "
                        f"{DEFAULT_DEVICE})")
    p.add_argument("--force", action="store_true", help="measure again even if stored")
    p.add_argument("--quick", action="store_true",
                   help="measure the quick calibration (seconds) instead of the full one; a "
                        "full one stored stays")
    p.add_argument("--show", action="store_true",
                   help="print a summary of the stored calibration (kind, date, noise, "
                        "rates, coefficients); measure nothing")
    p.add_argument("--json", action="store_true", help="with --show: the stored file's JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=cmd_calibrate)
    return parser


def _end_progress_bars() -> None:
    """Close the progress bars an interrupt left open (tqdm would draw them again at exit,
    below the last line)."""
    if "tqdm" in sys.modules:
        from tqdm import tqdm

        for bar in list(getattr(tqdm, "_instances", ())):  # tqdm's own list of open bars
            bar.close()


def _run(argv: list[str]) -> int:
    """Parse and run ``argv``; every failure a user can cause as one line and its exit code."""
    args = None
    try:
        args = build_parser().parse_args(argv)
        args.argv = argv
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in Python's flush at exit
        return code
    except KeyboardInterrupt:
        _end_progress_bars()
        return interrupted()
    except BrokenPipeError:
        raise  # main's: before OSError's, whose message it would print into the closed pipe
    except MemoryError as err:  # a matrix or a run larger than this machine's memory
        _end_progress_bars()
        doing = f"running clspmv {args.command}" if args is not None else "starting"
        return _error(f"out of memory while {doing}: "
                      f"{err or 'an allocation failed'}; use smaller matrices, fewer value "
                      "types or another machine", 1)
    except ClspmvError as err:  # a device (1); a matrix, a results file, a folder (2)
        return _error(err, 1 if isinstance(err, DeviceError) else 2)
    except OSError as err:  # a file or folder that cannot be read or written
        where = f"{err.filename}: " if err.filename is not None else ""
        return _error(f"{where}{err.strerror or err}; check the path and its permissions", 2)


@contextlib.contextmanager
def _notes_on_stderr() -> Iterator[None]:
    """The library's notes (records of the ``clspmv`` loggers at INFO and above) as lines
    ``clspmv: <note>`` on stderr while a command runs: the one place clspmv configures logging
    (the library only logs; a program using it decides what to show)."""
    package = logging.getLogger("clspmv")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("clspmv: %(message)s"))
    handler.setLevel(logging.INFO)
    level = package.level
    package.addHandler(handler)
    if package.getEffectiveLevel() > logging.INFO:
        package.setLevel(logging.INFO)
    try:
        yield
    finally:
        package.removeHandler(handler)
        package.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    with _notes_on_stderr():
        try:
            return _run(list(sys.argv[1:] if argv is None else argv))
        except BrokenPipeError:
            return output_closed()


if __name__ == "__main__":
    sys.exit(main())
