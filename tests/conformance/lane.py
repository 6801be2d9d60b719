"""What the conformance lane's tests share: `tvmfork conformance` run as a user runs it, and
its report read back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    """`tvmfork conformance ARGS...` in a process of its own; its output is echoed for the
    test's log."""
    cmd = [sys.executable, "-m", "tvmfork", "--repo", str(ROOT), "conformance", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    print(r.stdout)
    print(r.stderr[-6000:], file=sys.stderr)
    return r


def records(report: Path) -> list[dict[str, object]]:
    """The report's results.jsonl, a record per case and side, in order."""
    return [json.loads(line) for line in (report / "results.jsonl").read_text().splitlines()]


def by_case(report: Path) -> dict[tuple[str, str], dict[str, dict[str, object]]]:
    """(suite, case) -> side -> record."""
    out: dict[tuple[str, str], dict[str, dict[str, object]]] = {}
    for d in records(report):
        out.setdefault((str(d["suite"]), str(d["case"])), {})[str(d["side"])] = d
    return out
