"""Whether a CPU implementation vectorises across work-items (:mod:`clspmv.cpu_layout`): the
rule on the answers of the implementations seen (Intel's CPU runtime, PoCL, GPUs), the device's
property read from its own answers, and the layout that carries it; where kernels must keep to
narrow vectors (a compiler told of AVX-512 for a CPU it models without it)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from clspmv.cpu_layout import gathers_slices, narrow_vectors, target_cpu, vectorises_work_items
from clspmv.formats.layout import Layout


@pytest.mark.parametrize(("kind", "preferred", "native", "expected"), [
    ("cpu", 1, 16, True),    # Intel's CPU runtime with AVX-512 (2026.22 on a Xeon)
    ("cpu", 1, 8, True),     # Intel's CPU runtime with AVX2
    ("cpu", 16, 16, False),  # PoCL 3.0 and 3.1 with AVX-512
    ("cpu", 8, 8, False),    # PoCL with AVX2
    ("cpu", 4, 4, False),
    ("cpu", 0, 16, False),   # no width reported: nothing to go by
    ("gpu", 1, 1, False),    # NVIDIA's OpenCL
    ("gpu", 1, 4, False),    # a GPU's lockstep is its warp, not a vector width
    ("accelerator", 1, 16, False),
])
def test_rule_on_device_answers(kind: str, preferred: int, native: int, expected: bool) -> None:
    assert vectorises_work_items(kind, preferred, native) is expected


def fake_answers(device, kind: str, preferred: int, native: int):
    """``device`` with another type and the given preferred and native float vector widths (its
    own platform)."""
    answers = SimpleNamespace(preferred_vector_width_float=preferred,
                              native_vector_width_float=native,
                              platform=device.cl_device.platform)
    return replace(device, type=kind, cl_device=answers)


@pytest.mark.parametrize(("kind", "preferred", "native", "expected"), [
    ("cpu", 1, 16, True), ("cpu", 16, 16, False), ("gpu", 1, 4, False)])
def test_layout_carries_the_devices_answer(device, kind: str, preferred: int, native: int,
                                           expected: bool) -> None:
    """The device reads its answers once; the layout of every format carries the result, and the
    other layout facts stay the device's (but the ELL order's row-major width, which depends on
    the type: a CPU's is measured and stored, so a stand-in of another type differs there)."""
    fake = fake_answers(device, kind, preferred, native)
    assert fake.vectorises_work_items is expected
    fake.cl_device.native_vector_width_float = preferred  # read once: a later answer is unused
    assert fake.vectorises_work_items is expected
    layout = Layout.for_device(fake)
    assert layout.vectorises_work_items is expected
    own = Layout.for_device(device)
    assert replace(layout, vectorises_work_items=own.vectorises_work_items,
                   gathers_slices=own.gathers_slices,
                   row_major_width=own.row_major_width,
                   scattered_row_major_width=own.scattered_row_major_width) == own


def test_real_device_answers_its_own_widths(device) -> None:
    """The device under test (PoCL on CI: False) answers from its own queries."""
    d = device.cl_device
    want = vectorises_work_items(device.type, int(d.preferred_vector_width_float),
                                 int(d.native_vector_width_float))
    assert device.vectorises_work_items is want
    assert Layout.for_device(device).vectorises_work_items is want
    if "Portable Computing Language" in device.platform:
        assert want is False  # PoCL prefers its native width: its layouts stay as measured


def test_layout_carries_whether_slices_are_gathered(device) -> None:
    """The device's word on SELL's work-item per slice (its type and platform version:
    :func:`clspmv.cpu_layout.gathers_slices`) is in every layout made for it."""
    assert device.gathers_slices is gathers_slices(device.type,
                                                   device.cl_device.platform.version)
    assert Layout.for_device(device).gathers_slices is device.gathers_slices
    assert replace(device, type="gpu").gathers_slices is False


ZEN4_POCL30 = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3"
"""PyPI's PoCL 3.0-rc2 (LLVM 14) on a Zen 4: its CL_DEVICE_VERSION."""


@pytest.mark.parametrize(("version", "cpu"), [
    (ZEN4_POCL30, "znver3"),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512", "skylake-avx512"),
    ("OpenCL 3.0 PoCL HSTR: cpu-x86_64-pc-linux-gnu-sapphirerapids", "sapphirerapids"),
    ("OpenCL 3.1 (Build 0)", None),  # Intel's CPU runtime
    ("OpenCL 3.0 CUDA", None),
])
def test_target_cpu_read_from_the_device_version(version: str, cpu: str | None) -> None:
    assert target_cpu(version) == cpu


@pytest.mark.parametrize(("version", "native_double", "expected"), [
    (ZEN4_POCL30, 8, True),  # the process aborted there on dia's 64-byte vectors
    (ZEN4_POCL30, 4, False),  # a real Zen 3: AVX2 only, as its model says
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512", 8, False),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-x86-64-v3", 8, True),
    ("OpenCL 3.1 (Build 0)", 8, False),  # Intel's CPU runtime
    ("OpenCL 3.0 CUDA", 1, False),
])
def test_narrow_vectors_rule(version: str, native_double: int, expected: bool) -> None:
    assert narrow_vectors(version, native_double) is expected


def test_device_reads_narrow_vectors_from_its_answers(device) -> None:
    """The device under test answers from its own version and width; a stand-in with PoCL
    3.0's answers on a Zen 4 says True."""
    d = device.cl_device
    assert device.narrow_vectors is narrow_vectors(d.version, int(d.native_vector_width_double))
    zen4 = SimpleNamespace(version=ZEN4_POCL30, native_vector_width_double=8)
    assert replace(device, cl_device=zen4).narrow_vectors is True
    assert replace(device, type="gpu", cl_device=zen4).narrow_vectors is True  # its compiler
