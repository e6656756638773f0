"""The ``clspmv`` command's exit codes for Ctrl-C and for a reader of its output that went away,
and the helpers that end a run with them, shared by the light entry point (:mod:`clspmv.entry`)
and the command (:mod:`clspmv.cli`). Standard library only: the entry point imports it before
anything heavy."""

from __future__ import annotations

import os
import sys

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
