"""The ``clspmv`` command's entry point, light on purpose: :func:`main` imports the command
(:mod:`clspmv.cli`, whose imports of numpy, scipy, pyopencl and the benchmark take seconds on a
cold start) inside the handler of Ctrl-C and of a closed output, so that an interrupt while it
starts is one line and exit code 130, as one while it runs, never a traceback.

It imports nothing beyond the standard library at module level (of clspmv only
:mod:`clspmv.exit_codes`, itself standard library only): what the package's own ``__init__``
imports still comes first (Python imports a package before its modules)."""

from __future__ import annotations

from collections.abc import Sequence

from .exit_codes import interrupted, output_closed


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``clspmv`` with ``argv`` (default: ``sys.argv[1:]``) and return its exit code
    (:func:`clspmv.cli.main`); 130 for Ctrl-C while it starts (``clspmv: interrupted`` on
    stderr), 141 where the reader of its output has gone (as :func:`clspmv.cli.main`)."""
    try:
        from . import cli
    except KeyboardInterrupt:
        return interrupted()
    except BrokenPipeError:  # a note written while it starts, to a reader that has gone
        return output_closed()
    return cli.main(argv)
