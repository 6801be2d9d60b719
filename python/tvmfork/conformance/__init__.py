"""`tvmfork conformance`: cases the series was not written for, on stock TVM and on the fork.

Suites are data (`suites`), each case runs isolated in a worker process of its side
(`runner`, `worker`), and the report (`report`) names every regression: a case that works on
stock and not on the fork blocks a release.
"""

from __future__ import annotations

from pathlib import Path

from tvmfork import ui
from tvmfork.conformance import report, spec
from tvmfork.conformance.runner import CaseSpec, Result, run_cases


def run(
    cases: list[CaseSpec],
    sides: dict[str, Path],
    out: Path,
    target: str,
    jobs: int = 1,
    threads: int | None = None,
    path: Path | None = None,
    remote: spec.Remote | None = None,
    assemble: str = "",
) -> list[Result]:
    """Every case on every side (side name -> its interpreter), one progress line per case;
    worker logs go to `out`. `threads`: TVM, PyTorch and ONNX Runtime all use that many
    (default: each its own default). `path`: a folder of packages both sides' workers see
    (`--with`), after their own. `remote`: each case runs on a device of an RPC tracker.
    `assemble` (sm_80,sm_90): compile-only, each CUDA kernel assembled for those."""
    ui.note(f"{len(cases)} cases on {' and '.join(sides)}; worker logs in {out}")

    def progress(i: int, case: CaseSpec, by_side: dict[str, Result]) -> None:
        row = report.Row(case.suite, case.name, by_side.get("stock"), by_side.get("fork"))
        parts = []
        for side, r in sorted(by_side.items(), key=lambda kv: kv[0] != "stock"):
            t = f" {r.times['compile_s']:.1f} s" if "compile_s" in r.times else ""
            parts.append(f"{side} {report.word(r)}{t}")
        flag = f"  {row.verdict}" if row.verdict else ""
        ui.note(f"[{i + 1}/{len(cases)}] {case.suite}/{case.name}: {' | '.join(parts)}{flag}")

    env = {spec.TARGET_VAR: target, "PYTHONDONTWRITEBYTECODE": "1"}
    if threads:
        env.update({spec.THREADS_VAR: str(threads), "TVM_NUM_THREADS": str(threads)})
    if path is not None:
        env[spec.EXTRA_PATH_VAR] = str(path)
    if remote is not None:
        env[spec.RPC_VAR] = f"{remote.tracker}:{remote.key}"
        if remote.cross_cc:
            env[spec.CROSS_CC_VAR] = remote.cross_cc
    if assemble:
        env[spec.ASSEMBLE_VAR] = assemble
    return run_cases(cases, sides, out, env, progress, jobs=jobs)
