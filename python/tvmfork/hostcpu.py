"""This machine's CPU in one line, printed with every timing: timings compare only within one
run on one machine, and the CPU model changes between machines (an AMD znver3 one day, an
Intel Xeon with AVX-512 and AMX another)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

# The /proc/cpuinfo flags that name an x86 vector level, widest first.
X86_VECTORS = (
    ("amx_tile", "AVX-512 and AMX"),
    ("avx512f", "AVX-512"),
    ("avx2", "AVX2"),
    ("avx", "AVX"),
    ("sse4_2", "SSE4.2"),
)


def _fields(cpuinfo: Path) -> dict[str, str]:
    """The first processor's `key: value` lines of /proc/cpuinfo (empty where it is absent)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out.setdefault(key.strip(), value.strip())
    return out


def vectors(flags: set[str], machine: str) -> str:
    """The widest vector ISA the flags name: an x86 level, NEON/SVE on aarch64."""
    if machine in ("aarch64", "arm64"):
        return "SVE" if "sve" in flags else "NEON"
    return next((name for flag, name in X86_VECTORS if flag in flags), "SSE2")


def describe(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """e.g. "CPU AMD EPYC (x86_64, 2 logical CPUs, AVX-512)"."""
    info = _fields(cpuinfo)
    machine = platform.machine()
    model = info.get("model name") or info.get("Model") or platform.processor() or "unknown"
    flags = set((info.get("flags") or info.get("Features") or "").split())
    count = os.cpu_count() or 0
    return f"CPU {model} ({machine}, {count} logical CPUs, {vectors(flags, machine)})"
