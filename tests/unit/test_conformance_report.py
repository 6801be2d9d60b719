"""Conformance verdicts and reports: regressions and fixes are named, counts add up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmfork.conformance import report
from tvmfork.conformance.runner import Result

pytestmark = pytest.mark.unit


def _r(case: str, side: str, status: str, stage: str = "", **times: float) -> Result:
    return Result(
        "s",
        case,
        side,
        status,
        stage or ("ok" if status == "ok" else "compile"),
        "" if status == "ok" else "boom",
        dict(times),
    )


RESULTS = [
    _r("both_ok", "stock", "ok", compile_s=1.0),
    _r("both_ok", "fork", "ok", compile_s=2.0, rel_err=1.25e-06),
    _r("broke", "stock", "ok"),
    _r("broke", "fork", "crash", "compile"),
    _r("mended", "stock", "wrong", "numerics"),
    _r("mended", "fork", "ok", compile_s=3.0),
    _r("both_bad", "stock", "error", "import"),
    _r("both_bad", "fork", "timeout", "compile"),
    _r("skipped", "stock", "not run", ""),
    _r("skipped", "fork", "not run", ""),
]


def test_verdicts_name_regressions_and_fixes() -> None:
    verdicts = {row.case: row.verdict for row in report.rows(RESULTS)}
    assert verdicts == {
        "both_ok": "",
        "broke": "REGRESSION",
        "mended": "fixed",
        "both_bad": "",
        "skipped": "",
    }
    assert [r.case for r in report.regressions(RESULTS)] == ["broke"]


def test_summary_counts_each_side() -> None:
    (line,) = report.summary(RESULTS)
    assert line == (
        "s: 5 cases; stock 2 ok, 1 wrong, 1 error, 1 not run; "
        "fork 2 ok, 1 crash, 1 timeout, 1 not run; 1 regressions, 1 fixed"
    )


def test_reports_round_trip_and_list_the_slowest(tmp_path: Path) -> None:
    jsonl, md = report.write(RESULTS, tmp_path)
    assert report.load(jsonl) == RESULTS
    text = md.read_text()
    assert "| s | broke | ok | crash (compile) | REGRESSION |" in text
    slow = text.split("Slowest fork compiles")[1]
    assert slow.index("mended") < slow.index("both_ok")
