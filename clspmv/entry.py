"""The ``clspmv`` command's entry point, light on purpose: :func:`main` imports the command
(:mod:`clspmv.cli`, whose imports of numpy, scipy, pyopencl and the benchmark take seconds on a
cold start) inside the handler of Ctrl-C and of a closed output, so that an interrupt while it
starts is one line and exit code 130, as one while it runs, never a traceback.

It imports nothing of clspmv or beyond the standard library at module level: what the package's
own ``__init__`` imports still comes first (Python imports a package before its modules)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

INTERRUPTED = 130
"""The exit code after Ctrl-C (``clspmv: interrupted`` on stderr)."""
OUTPUT_CLOSED = 141
"""The exit code where the reader of the output went away, as a program killed by SIGPIPE."""


def interrupted() -> int:
    """Say ``clspmv: interrupted`` on stderr; the exit code :data:`INTERRUPTED`."""
    print("clspmv: interrupted", file=sys.stderr)
    return INTERRUPTED


def output_closed() -> int:
    """The exit code where the reader of stdout or stderr went away (``clspmv ... | head``):
    :data:`OUTPUT_CLOSED`, quietly. Both are pointed at /dev/null so that Python's last flush at
    exit does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):  # not a file (captured in tests)
            pass
    os.close(devnull)
    return OUTPUT_CLOSED


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
