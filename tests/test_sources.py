"""MATRIX arguments: files, generator specs and SuiteSparse downloads from a local HTTP server.

The server runs on 127.0.0.1 in a thread and serves ``MM/GROUP/NAME.tar.gz`` archives laid out
as the SuiteSparse collection's (``NAME/NAME.mtx`` inside), built in tmp_path.
"""

from __future__ import annotations

import functools
import http.server
import io as stdio
import json
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import bandwidth, io
from clspmv.bench import sources
from clspmv.cli import main

MATRIX = sp.csr_matrix(np.array([[4.0, -1, 0, 0], [-1, 4, -1, 0], [0, -1, 4, -1], [0, 0, -1, 4]]))


def make_archive(root: Path, group: str, name: str, members: dict[str, bytes]) -> Path:
    path = root / "MM" / group / f"{name}.tar.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, stdio.BytesIO(data))
    return path


def mtx_bytes(A: sp.spmatrix, tmp: Path) -> bytes:
    io.write(tmp / "m.mtx", A)
    return (tmp / "m.mtx").read_bytes()


class Server:
    """An HTTP server on 127.0.0.1 serving a folder; counts the requests per path."""

    def __init__(self, root: Path) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args) -> None:
                pass

        handler = functools.partial(Handler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/MM"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    root = tmp_path / "site"
    data = mtx_bytes(MATRIX, tmp_path)
    make_archive(root, "Test", "tiny", {"tiny/tiny.mtx": data, "tiny/tiny_b.mtx": b"rhs"})
    make_archive(root, "Test", "broken", {"broken/other.mtx": data})
    (root / "MM" / "Test" / "garbage.tar.gz").write_bytes(b"not a tar file at all")
    srv = Server(root)
    monkeypatch.setenv("CLSPMV_SUITESPARSE_URL", srv.url + "/")
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))
    yield srv
    srv.close()


def test_download_once_then_cached(server: Server, tmp_path: Path) -> None:
    src = sources.resolve("ss:Test/tiny", progress=False)
    assert (src.name, src.kind) == ("Test/tiny", "suitesparse")
    assert server.requests == []  # resolving checks the name only
    A = src.load()
    assert (A != MATRIX).nnz == 0
    cached = tmp_path / "cache" / "suitesparse" / "Test" / "tiny.mtx"
    assert cached.is_file()
    assert [p.name for p in cached.parent.iterdir()] == ["tiny.mtx"]  # no temporary files left
    assert server.requests == ["/MM/Test/tiny.tar.gz"]
    assert (sources.resolve("ss:Test/tiny").load() != MATRIX).nnz == 0
    assert server.requests == ["/MM/Test/tiny.tar.gz"]  # read from the cache the second time


def test_progress_bar(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    sources.suitesparse_file("Test", "tiny", progress=True)
    assert "download Test/tiny" in capsys.readouterr().err


@pytest.mark.parametrize("name, message", [
    ("missing", "cannot download {url}/Test/missing.tar.gz: HTTP 404"),
    ("broken", "the download is not a .tar.gz holding broken/broken.mtx"),
    ("garbage", "the download is not a .tar.gz holding garbage/garbage.mtx"),
])
def test_download_errors(server: Server, tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(sources.SourceError) as exc:
        sources.suitesparse_file("Test", name, progress=False)
    assert message.format(url=server.url) in str(exc.value)
    folder = tmp_path / "cache" / "suitesparse" / "Test"
    assert list(folder.iterdir()) == []  # nothing half-written stays behind


def test_unreachable_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = Server(tmp_path)
    url = srv.url
    srv.close()  # nothing listens there any more
    monkeypatch.setenv("CLSPMV_SUITESPARSE_URL", url)
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(sources.SourceError, match="cannot download .*CLSPMV_SUITESPARSE_URL"):
        sources.suitesparse_file("Test", "tiny", progress=False)


@pytest.mark.parametrize("argument", ["ss:tiny", "ss:Test/", "ss:../x/y", "ss:a/b/c"])
def test_bad_names(argument: str) -> None:
    with pytest.raises(sources.SourceError, match="expected ss:GROUP/NAME"):
        sources.resolve(argument)


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLSPMV_SUITESPARSE_URL", raising=False)
    monkeypatch.delenv("CLSPMV_CACHE_DIR", raising=False)
    monkeypatch.delenv("CLSPMV_CACHE", raising=False)
    assert sources.base_url() == "https://suitesparse-collection-website.herokuapp.com/MM"
    import platformdirs

    assert sources.cache_dir() == Path(platformdirs.user_cache_dir("clspmv"))


def test_files_and_generators(tmp_path: Path) -> None:
    io.write(tmp_path / "small.mtx.gz", MATRIX)
    src = sources.resolve(str(tmp_path / "small.mtx.gz"))
    assert (src.name, src.kind) == ("small", "file") and (src.load() != MATRIX).nnz == 0
    gen = sources.resolve("gen:random:k=3,n=50")
    assert (gen.name, gen.kind) == ("gen:random:n=50,k=3", "generator")
    assert gen.load().nnz == 150
    with pytest.raises(sources.SourceError, match="nope.mtx: no such file"):
        sources.resolve(str(tmp_path / "nope.mtx"))


def test_bench_on_a_suitesparse_matrix(server: Server, device: clspmv.Device, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda d: 4 << 20)
    out = tmp_path / "run"
    argv = ["bench", "ss:Test/tiny", "--formats", "csr-scalar,dia", "--dtype", "float32",
            "--baselines", "scipy", "--repeat", "3", "--quiet", "--out", str(out),
            "--device", f"{device.index[0]}:{device.index[1]}"]
    assert main(argv) == 0
    records = json.loads((out / "results.json").read_text())["records"]
    assert [(r["matrix"], r["format"], r["status"]) for r in records] == [
        ("Test/tiny", "scipy", "ok"), ("Test/tiny", "csr-scalar", "ok"),
        ("Test/tiny", "dia", "ok")]
    assert all(r["nnz"] == 10 and r["rows"] == 4 for r in records)
    assert server.requests == ["/MM/Test/tiny.tar.gz"]
