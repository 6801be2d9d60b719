"""The multi-ISA prototype's choice of level (scripts/multi_isa.py), without TVM."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit

_spec = importlib.util.spec_from_file_location("multi_isa", ROOT / "scripts/multi_isa.py")
assert _spec and _spec.loader
mi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mi)

BUNDLE = {lv: mi.required_flags(lv) for lv in ("x86-64", "x86-64-v3")}
SSE2_ONLY = {"fpu", "sse", "sse2", "cx16", "popcnt"}
AVX2 = SSE2_ONLY | set(mi.required_flags("x86-64-v3"))


def test_levels_accumulate_the_flags_below_them() -> None:
    v3, v4 = mi.required_flags("x86-64-v3"), mi.required_flags("x86-64-v4")
    assert {"sse2", "sse4_2", "avx2", "fma"} <= set(v3) and "avx512f" not in v3
    assert set(v3) < set(v4)
    with pytest.raises(mi.BundleError, match="unknown ISA level 'znver9'"):
        mi.required_flags("znver9")


def test_the_highest_level_the_cpu_runs_is_chosen() -> None:
    assert mi.choose(BUNDLE, AVX2) == "x86-64-v3"
    # an AVX2 CPU without one v3 flag (a VM masking FMA) gets the baseline, not SIGILL
    assert mi.choose(BUNDLE, AVX2 - {"fma"}) == "x86-64"
    assert mi.choose(BUNDLE, SSE2_ONLY) == "x86-64"


def test_a_forced_level_is_checked_against_the_cpu() -> None:
    assert mi.choose(BUNDLE, AVX2, force="x86-64") == "x86-64"
    with pytest.raises(mi.BundleError, match=r"this CPU lacks .*avx2.*fma"):
        mi.choose(BUNDLE, SSE2_ONLY, force="x86-64-v3")
    with pytest.raises(mi.BundleError, match="this bundle has x86-64, x86-64-v3"):
        mi.choose(BUNDLE, AVX2, force="x86-64-v4")
    with pytest.raises(mi.BundleError, match="no level of this bundle runs"):
        mi.choose({"x86-64-v3": BUNDLE["x86-64-v3"]}, SSE2_ONLY)


def test_cpu_flags_reads_the_flags_line(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx2\n\nprocessor\t: 1\n")
    assert mi.cpu_flags(info) == {"fpu", "sse", "sse2", "avx2"}
    info.write_text("processor\t: 0\n")
    with pytest.raises(mi.BundleError, match="lists no 'flags' line"):
        mi.cpu_flags(info)
    with pytest.raises(mi.BundleError, match="cannot read"):
        mi.cpu_flags(tmp_path / "missing")


def test_a_folder_without_a_manifest_is_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(mi.BundleError, match="is not a bundle"):
        mi.levels_of(tmp_path)
