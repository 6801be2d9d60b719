"""The CPU line printed with every timing (`tvmfork.hostcpu`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmfork import hostcpu

pytestmark = pytest.mark.unit

XEON = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512bw amx_tile amx_bf16

processor\t: 1
model name\t: another
"""


def test_the_first_processor_s_model_and_widest_vectors(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(XEON)
    line = hostcpu.describe(info)
    assert line.startswith("CPU Intel(R) Xeon(R) Platinum 8480+ (")
    assert line.endswith(", AVX-512 and AMX)")


@pytest.mark.parametrize(
    ("flags", "machine", "want"),
    [
        ({"sse2", "avx", "avx2", "fma"}, "x86_64", "AVX2"),
        ({"sse2", "avx2", "avx512f"}, "x86_64", "AVX-512"),
        ({"sse", "sse2"}, "x86_64", "SSE2"),
        ({"asimd", "sve"}, "aarch64", "SVE"),
        ({"asimd"}, "aarch64", "NEON"),
    ],
)
def test_vector_levels(flags: set[str], machine: str, want: str) -> None:
    assert hostcpu.vectors(flags, machine) == want


def test_no_cpuinfo_still_gives_a_line(tmp_path: Path) -> None:
    assert hostcpu.describe(tmp_path / "absent").startswith("CPU ")
