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


def test_speed_table_ratios_and_geometric_means(tmp_path: Path) -> None:
    """Ratios to PyTorch/ORT/Inductor come from the fork side's own medians; stock/fork across
    sides; a row per timed case and a geometric-mean row; an untimed anchor (export, compile
    or result failed) is said, not a number; the TVM target is named under the table."""
    results = [
        _r("a", "stock", "ok", tvm_ms=40.0, torch_ms=10.0, compile_s=2.0),
        _r(
            "a", "fork", "ok", tvm_ms=5.0, torch_ms=10.0, ort_ms=4.0, inductor_ms=2.5, compile_s=6.0
        ),
        _r("b", "stock", "ok", tvm_ms=80.0, torch_ms=20.0, compile_s=1.0),
        _r("b", "fork", "ok", tvm_ms=40.0, torch_ms=20.0, compile_s=1.0),
        _r("untimed", "stock", "ok"),
        _r("untimed", "fork", "ok"),
        _r("broken", "stock", "ok", tvm_ms=1.0),
        _r("broken", "fork", "error", "compile"),
    ]
    results[3].notes["ort_error"] = "TorchExportError: data-dependent guard"
    results[3].notes["inductor_error"] = "BackendCompilerFailed: no C++ compiler"
    for r in results[1], results[3]:
        r.notes["tvm_target"] = "llvm -keys=cpu -mcpu=znver3"
    rows = report.speed(results)
    assert [s.case for s in rows] == ["a", "b"]
    a, b = rows
    assert (a.fork_per_torch, a.fork_per_ort, a.fork_per_inductor) == (0.5, 1.25, 2.0)
    assert (a.stock_per_fork, a.compile_ratio) == (8.0, 3.0)
    assert (b.fork_per_torch, b.fork_per_ort, b.fork_per_inductor, b.stock_per_fork) == (
        2.0,
        None,
        None,
        2.0,
    )
    table = report.speed_table(results, "target host, threads 1")
    assert table[0].startswith("Speed (target host, threads 1)")
    assert "| s | b | 20.00 | not timed | not timed | 80.00 | 40.00 | 2.00 |" in table[5]
    # geometric means: fork/PyTorch sqrt(0.5 * 2) = 1, stock/fork sqrt(8 * 2) = 4
    assert table[-3].startswith("| geometric mean | 2 cases |")
    assert "1.00 (n=2) | 1.25 (n=1) | 2.00 (n=1) | 4.00 (n=2)" in table[-3]
    assert table[-1] == "TVM target: llvm -keys=cpu -mcpu=znver3"
    assert report.speed_table(RESULTS) == []
    jsonl, md = report.write(results, tmp_path, "target host, threads 1")
    assert "Speed (target host, threads 1)" in md.read_text()
    again = report.load(jsonl)
    assert again[3].notes["ort_error"] == "TorchExportError: data-dependent guard"
    assert [s.fork_per_ort for s in report.speed(again)] == [1.25, None]


def test_the_header_names_each_sides_tvm_and_flags_a_venv_that_imports_another(
    tmp_path: Path,
) -> None:
    """run.json and report.md name the TVM each side's worker imported and its wheel; a
    version other than the wheel's (a venv holding another TVM) is said, not hidden."""
    wheel = "apache_tvm-0.26.0+fork.ab.py-py3-none-manylinux_2_28_x86_64.whl"
    header = report.Header(
        sides={
            "stock": {"tvm": "0.26.0", "wheel": "apache_tvm-0.26.0-py3-none-any.whl"},
            "fork": {"tvm": "0.26.0", "wheel": wheel, "sha256": "cd" * 32},
        },
        shard="2/3",
        cases=9,
    )
    stock_line, fork_line, shard_line = header.lines()
    assert stock_line == "stock: TVM 0.26.0 from apache_tvm-0.26.0-py3-none-any.whl"
    assert "NOT the wheel's version 0.26.0+fork.ab.py" in fork_line
    assert shard_line == "shard 2/3 of a run of 9 cases"
    _, md = report.write(RESULTS, tmp_path, header=header)
    assert report.load_header(tmp_path) == header
    assert fork_line in md.read_text()


def test_a_wrong_result_on_the_fork_is_named_whatever_stock_did() -> None:
    """A wrong number on the fork blocks like a regression, also where stock was wrong too or
    stopped with an error; a wrong number on stock alone does not."""
    results = [
        Result("s", "both", "stock", "wrong", "numerics"),
        Result("s", "both", "fork", "wrong", "numerics", "output 0: NaN at 1 element(s)"),
        Result("s", "became", "stock", "error", "import"),
        Result("s", "became", "fork", "wrong", "numerics"),
        Result("s", "fixed", "stock", "wrong", "numerics"),
        Result("s", "fixed", "fork", "ok", "ok"),
    ]
    assert [r.case for r in report.fork_wrong(results)] == ["both", "became"]
    assert report.regressions(results) == []
