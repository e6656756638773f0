"""tools/define_ab.py: a format's kernels built with one more -D definition, beside the library's
own build."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pytest

import clspmv
from clspmv import build
from clspmv.bench.generators import generate

TOOL = runpy.run_path(str(Path(__file__).resolve().parent.parent / "tools" / "define_ab.py"))


def test_format_texts_name_the_format_and_its_integer_options() -> None:
    assert TOOL["parse_format"]("sell") == ("sell", {})
    assert TOOL["parse_format"]("csr-blocks:unroll=8") == ("csr-blocks", {"unroll": 8})
    assert TOOL["parse_format"]("sell:slice_items=0:sigma=1") == (
        "sell", {"slice_items": 0, "sigma": 1})


@pytest.mark.parametrize(("fmt", "file"), [("csr-blocks:unroll=4", "csr_blocks.cl"),
                                           ("sell:slice_items=1", "sell.cl")])
def test_the_define_reaches_the_build_and_the_product_stays_scipys(
        device: clspmv.Device, fmt: str, file: str) -> None:
    A = generate("gen:random:n=3000,k=6,seed=7").tocsr()
    define = f"CLSPMV_TEST_DEFINE_AB_{file[:-3].upper()}"  # read by no kernel: options only
    M = TOOL["convert"](A, device, fmt, define)
    name, options = TOOL["parse_format"](fmt)
    assert M.format == name and all(M.params[k] == v for k, v in options.items())
    built = [opts for (context, source, opts) in build._cache
             if context == device.context and source == file]
    assert any(f"-D{define}=1" in opts for opts in built)
    x = np.random.default_rng(1).random(A.shape[1])
    assert np.allclose(M @ x, A @ x, rtol=1e-12, atol=1e-12)


def test_a_line_has_each_formats_ratio_the_control_and_the_error(device: clspmv.Device) -> None:
    A = generate("gen:random:n=3000,k=6,seed=7").tocsr()
    line = TOOL["compare"](A, device, ["csr-blocks:unroll=4", "sell"], "csr-blocks:unroll=1",
                           "CLSPMV_TEST_DEFINE_AB", 2)
    ratios = dict(re.findall(r"(\S+) with/without=([0-9.]+)", line))
    assert set(ratios) == {"csr-blocks:unroll=4", "sell"}
    assert all(float(r) > 0 for r in ratios.values())
    assert re.search(r"control a/b=[0-9.]+", line)
    assert float(re.search(r"err=(\S+)", line).group(1)) < 1e-12
