"""The native lane's last result, kept in docs/native-lane.md: written by a passing `make
test-native`, read by `tvmfork check`, which says when the native closure (the native patches
and those that need one) changed since, so the source build and the lane are run again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tvmfork.series import Series

RECORD = Path("docs") / "native-lane.md"


@dataclass(frozen=True)
class Result:
    date: str
    commit: str
    wheel: str
    counts: dict[str, int]
    machine: str


def render(series: Series, result: Result) -> str:
    closure = series.native_closure()
    counts = ", ".join(f"{n} {k}" for k, n in result.counts.items())
    lines = [
        "# The native lane's last result",
        "",
        "Written by `make test-native` when it passes (a source-built wheel of the series, the",
        "native patches' regression tests on it, and the `src_cc/` C++ tests); `tvmfork check`",
        "compares the native closure below with the series and says when it changed since.",
        "",
        f"- date: {result.date}",
        f"- tvmfork commit: {result.commit}",
        f"- machine: {result.machine}",
        f"- wheel: `{result.wheel}`",
        f"- tests: {counts}",
        f"- native closure: `{series.native_digest}` ({len(closure)} patches)",
        "",
        *(f"  - `{p.name}`" + (" (native)" if p.native else "") for p in closure),
        "",
    ]
    return "\n".join(lines)


def recorded_digest(repo: Path) -> tuple[str, str] | None:
    """(closure digest, date) of the last passing native lane, or None without a record."""
    try:
        text = (repo / RECORD).read_text()
    except OSError:
        return None
    digest = re.search(r"^- native closure: `([0-9a-f]{64})`", text, re.M)
    date = re.search(r"^- date: (.*)$", text, re.M)
    if digest is None:
        return None
    return digest.group(1), date.group(1) if date else "unknown date"


def staleness(repo: Path, series: Series) -> str | None:
    """Why the native lane must run again, or None when its record covers the series."""
    if not series.native_closure():
        return None
    found = recorded_digest(repo)
    if found is None:
        return f"the native lane has no record ({RECORD})"
    digest, date = found
    if digest != series.native_digest:
        return f"the native closure changed since the native lane last passed ({date}, {RECORD})"
    return None
