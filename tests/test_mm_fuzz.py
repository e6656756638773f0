"""Fuzzing the Matrix Market readers (see tests/mm_fuzz.py for the checks on each input).

One long-lived worker process reads the inputs under an address-space limit; an input that
kills it or outlasts :data:`TIMEOUT` fails the test with that input (saved beside the report).
``CLSPMV_FUZZ_INPUTS`` sets the number of inputs: 2,000 by default (CI, derandomized by the
``ci`` profile, about a minute on 2 cores), 50,000 under ``tox -e fuzz``.
"""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from mm_fuzz import mm_files, reference

INPUTS = int(os.environ.get("CLSPMV_FUZZ_INPUTS", "2000"))
TIMEOUT = 60.0
"""Seconds one input may take (a hang is a failure; the slowest inputs take about a second)."""
HERE = Path(__file__).parent


class Worker:
    """The worker process of tests/mm_fuzz.py, restarted after it dies."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending = b""
        self.count = 0
        self.largest_peak = (0.0, 0)  # the largest share of the memory bound, the input's id
        self.starts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(HERE.parent), str(HERE), os.environ.get("PYTHONPATH", "")])}
        self.pending = b""
        return subprocess.Popen([sys.executable, str(HERE / "mm_fuzz.py")], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, bufsize=0, env=env)

    def _line(self) -> dict | None:
        """The worker's next answer, or None if it ends or gives none within TIMEOUT."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:  # unbuffered: select sees every byte not yet read
            ready, _, _ = select.select([fd], [], [], TIMEOUT)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the worker ended
                self.proc.wait(timeout=TIMEOUT)
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def check(self, name: str, data: bytes) -> str | None:
        """The worker's verdict on one input, or why it gave none."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
            self.starts += 1
        self.count += 1
        job = {"id": self.count, "name": name, "data": base64.b64encode(data).decode()}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(job).encode() + b"\n")
        for expected in ("start", "done"):
            answer = self._line()
            if answer is None or answer.get(expected) != self.count:
                died = self.proc.poll()
                self.proc.kill()
                self.proc.wait()
                why = (f"died (exit status {died})" if died is not None
                       else f"gave no answer in {TIMEOUT} s")
                return f"the worker {why} on this input"
        self.largest_peak = max(self.largest_peak, (answer["peak"], self.count))
        return answer["problem"]

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def worker(request: pytest.FixtureRequest):
    w = Worker()
    yield w
    w.close()
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        share, which = w.largest_peak
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nfuzz: {w.count} inputs, largest read peak {share:.3f} of "
                                f"the memory bound (input {which})")


@settings(max_examples=INPUTS)
@given(case=mm_files())
def test_fuzz_readers(worker: Worker, case: tuple[str, bytes],
                      tmp_path_factory: pytest.TempPathFactory) -> None:
    name, data = case
    problem = worker.check(name, data)
    if problem is not None:
        saved = tmp_path_factory.mktemp("fuzz-failure") / name
        saved.write_bytes(data)
        pytest.fail(f"{problem} (input saved as {saved}, {len(data)} bytes: {data[:200]!r})")


def test_worker_reports_the_input_that_kills_it(worker: Worker) -> None:
    # A worker that dies is a failure of that input, not a hang or a lost count.
    name, data = "m.mtx", b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n"
    assert worker.check(name, data) is None
    assert worker.proc is not None
    worker.proc.kill()
    worker.proc.wait()
    assert worker.check(name, data) is None  # restarted


def test_reference_reads_and_refuses() -> None:
    # The reference can fail: it refuses what the grammar refuses, at the right line.
    ok = reference(b"%%MatrixMarket matrix coordinate real symmetric\n% c\n3 3 2\n2 1 -0.5\n"
                   b"3 3 inf\n")
    assert (ok.error_line, ok.shape) == (0, (3, 3))
    assert (ok.rows, ok.cols) == ([1, 2, 0], [0, 2, 1])
    assert ok.values[:2] == [-0.5, float("inf")] and ok.values[2] == -0.5
    for text, line in ((b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.2.3\n", 3),
                       (b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n", 3),
                       (b"%%MatrixMarket matrix coordinate real general\n2 2 1\n% x\n3 1 1\n", 4),
                       (b"%%MatrixMarket matrix array real general\n1 1\n1_0\n", 3),
                       (b"\xef\xbb\xbf%%MatrixMarket matrix array real general\n1 1\n1\n", 1)):
        assert reference(text).error_line == line
    assert reference(b"\x1f\x8b\x08junk").error_line == -1
