"""`tvmfork conformance`: cases the series was not written for, on stock TVM and on the fork.

Suites are data (`suites`), each case runs isolated in a worker process of its side
(`runner`, `worker` and its parts in `casework`), and the report (`report`) names every
regression: a case that works on stock and not on the fork blocks a release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tvmfork import ui
from tvmfork.conformance import report
from tvmfork.conformance.casework.spec import RunConfig
from tvmfork.conformance.runner import CaseSpec, Result, run_cases


@dataclass
class Ran:
    """A run's results, and what each side's worker said it imported (`tvm`: the version,
    `tvm_file`: the folder), from the last worker of that side to start."""

    results: list[Result]
    imported: dict[str, dict[str, Any]] = field(default_factory=dict)


def run(
    cases: list[CaseSpec], sides: dict[str, Path], out: Path, config: RunConfig, jobs: int = 1
) -> Ran:
    """Every case on every side (side name -> its interpreter), each sent with `config`, one
    progress line per case; worker logs go to `out`."""
    ui.note(f"{len(cases)} cases on {' and '.join(sides)}; worker logs in {out}")
    imported: dict[str, dict[str, Any]] = {}

    def progress(i: int, case: CaseSpec, by_side: dict[str, Result]) -> None:
        row = report.Row(case.suite, case.name, by_side.get("stock"), by_side.get("fork"))
        parts = []
        for side, r in sorted(by_side.items(), key=lambda kv: kv[0] != "stock"):
            t = f" {r.times['compile_s']:.1f} s" if "compile_s" in r.times else ""
            parts.append(f"{side} {report.word(r)}{t}")
        flag = f"  {row.verdict}" if row.verdict else ""
        ui.note(f"[{i + 1}/{len(cases)}] {case.suite}/{case.name}: {' | '.join(parts)}{flag}")

    def ready(side: str, said: dict[str, Any]) -> None:
        imported[side] = {k: v for k, v in said.items() if k != "ready"}

    results = run_cases(cases, sides, out, config, progress, jobs=jobs, on_ready=ready)
    return Ran(results, imported)
