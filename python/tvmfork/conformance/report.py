"""Conformance results: verdicts (regression, fix), JSON lines, a Markdown table, summaries.

A regression is a case that is ok on stock and not ok on the fork; a fix, the reverse. Both
are reported by name, and any regression makes `tvmfork conformance` exit non-zero.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from tvmfork.conformance.runner import Result

STATUSES = ("ok", "wrong", "error", "crash", "timeout", "not run")


@dataclass(frozen=True)
class Row:
    suite: str
    case: str
    stock: Result | None
    fork: Result | None

    @property
    def verdict(self) -> str:
        if self.stock is None or self.fork is None:
            return ""
        if self.stock.ok and not self.fork.ok:
            return "REGRESSION"
        if self.fork.ok and not self.stock.ok:
            return "fixed"
        return ""


def rows(results: list[Result]) -> list[Row]:
    by: dict[tuple[str, str], dict[str, Result]] = defaultdict(dict)
    for r in results:
        by[(r.suite, r.case)][r.side] = r
    return [Row(s, c, d.get("stock"), d.get("fork")) for (s, c), d in by.items()]


def word(r: Result | None) -> str:
    if r is None:
        return "-"
    if r.status in ("ok", "not run"):
        return r.status
    return f"{r.status} ({r.stage})" if r.status in ("error", "crash", "timeout") else r.status


def summary(results: list[Result]) -> list[str]:
    """One line per suite: counts per side, regressions, fixes."""
    lines = []
    suites: dict[str, list[Row]] = defaultdict(list)
    for row in rows(results):
        suites[row.suite].append(row)
    for suite, rs in suites.items():
        parts = [f"{suite}: {len(rs)} cases"]
        for side in ("stock", "fork"):
            c = Counter(getattr(r, side).status for r in rs if getattr(r, side) is not None)
            if c:
                counts = ", ".join(f"{c[s]} {s}" for s in STATUSES if c[s])
                parts.append(f"{side} {counts}")
        reg = sum(r.verdict == "REGRESSION" for r in rs)
        fix = sum(r.verdict == "fixed" for r in rs)
        parts.append(f"{reg} regressions, {fix} fixed")
        lines.append("; ".join(parts))
    return lines


def regressions(results: list[Result]) -> list[Row]:
    return [r for r in rows(results) if r.verdict == "REGRESSION"]


def _num(r: Result | None, key: str, fmt: str) -> str:
    if r is None or key not in r.times:
        return ""
    return format(r.times[key], fmt)


def markdown(results: list[Result], slowest: int = 10) -> str:
    """The table: every case with both sides, the verdict, times; then the slowest cases."""
    out = [
        "| suite | case | stock | fork | verdict | compile s (stock / fork) | "
        "run ms (stock / fork) | PyTorch ms | ORT ms | fork error |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    all_rows = rows(results)
    for r in all_rows:
        ref = r.fork or r.stock
        err = r.fork.error if r.fork is not None and not r.fork.ok else ""
        out.append(
            f"| {r.suite} | {r.case} | {word(r.stock)} | {word(r.fork)} | {r.verdict} | "
            f"{_num(r.stock, 'compile_s', '.1f')} / {_num(r.fork, 'compile_s', '.1f')} | "
            f"{_run_ms(r.stock)} / {_run_ms(r.fork)} | {_num(ref, 'torch_ms', '.1f')} | "
            f"{_num(ref, 'ort_ms', '.1f')} | {_cell(err)} |"
        )
    out += ["", "Summary:", "", *[f"- {line}" for line in summary(results)]]
    timed = [r for r in all_rows if r.fork is not None and "compile_s" in r.fork.times]
    timed.sort(key=lambda r: -(r.fork.times["compile_s"] if r.fork else 0))
    if timed:
        out += ["", f"Slowest fork compiles ({min(slowest, len(timed))}):", ""]
        for r in timed[:slowest]:
            assert r.fork is not None
            stock = f", stock {_num(r.stock, 'compile_s', '.1f')} s" if r.stock else ""
            out.append(f"- {r.suite}/{r.case}: {r.fork.times['compile_s']:.1f} s{stock}")
    return "\n".join(out) + "\n"


def _run_ms(r: Result | None) -> str:
    if r is None:
        return ""
    return _num(r, "tvm_ms", ".1f") or _num(r, "first_run_ms", ".1f")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:160]


def write(results: list[Result], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl = out_dir / "results.jsonl"
    jsonl.write_text("".join(json.dumps(r.to_json()) + "\n" for r in results))
    md = out_dir / "report.md"
    md.write_text(markdown(results))
    return jsonl, md


def load(jsonl: Path) -> list[Result]:
    results = []
    for line in jsonl.read_text().splitlines():
        d = json.loads(line)
        keys = ("suite", "case", "side", "status", "stage", "error")
        times = {k: float(v) for k, v in d.items() if k not in keys}
        results.append(
            Result(d["suite"], d["case"], d["side"], d["status"], d["stage"], d["error"], times)
        )
    return results
