"""scripts/benchmarks_doc.py: a timed report becomes a section of docs/benchmarks.md per
suite, keyed by date and commit, with its speed table and chart; writing the same report
again replaces its section, and older sections stay."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tvmfork.conformance import charts, report
from tvmfork.conformance.runner import Result

pytestmark = pytest.mark.unit
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "benchmarks_doc.py"


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("benchmarks_doc", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks_doc"] = mod
    spec.loader.exec_module(mod)
    return mod


def _report(folder: Path, fork_ms: float) -> Path:
    times = {"tvm_ms": fork_ms, "torch_ms": 10.0, "ort_ms": 8.0, "compile_s": 1.0}
    results = [
        Result("torchvision", "resnet18", "stock", "ok", "ok", "", {"tvm_ms": 40.0}),
        Result("torchvision", "resnet18", "fork", "ok", "ok", "", times),
        Result("onnx-node", "test_abs", "fork", "ok", "ok"),  # untimed: no section
    ]
    header = report.Header(
        sides={"fork": {"tvm": "0.26.0+fork.x", "wheel": "w.whl", "sha256": "ab"}},
        context="target host, threads 1, CPU AMD EPYC",
        commit="0123456789abcdef",
        date="2026-11-27T01:00:00Z",
    )
    report.write(results, folder, header=header)
    return folder


def test_a_report_becomes_a_section_with_its_table_and_chart(tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "benchmarks.md"
    doc.parent.mkdir()
    doc.write_text(_script().HEAD + "## older, by hand\n\nkept\n")
    assert _script().main([str(_report(tmp_path / "r", 5.0)), "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert "## torchvision, 2026-11-27 (commit 0123456789)" in text
    assert "| torchvision | resnet18 | 10.00 | 8.00 |" in text
    assert "fork: TVM 0.26.0+fork.x from w.whl" in text
    assert "onnx-node" not in text.split("## older")[0]
    assert text.index("## torchvision") < text.index("## older, by hand")
    if charts.available():
        assert (doc.parent / "charts" / "2026-11-27-torchvision-0123456789.png").is_file()
        assert "](charts/2026-11-27-torchvision-0123456789.png)" in text
    # the same run again: its section replaced, not repeated
    _script().main([str(_report(tmp_path / "r", 6.0)), "--doc", str(doc)])
    again = doc.read_text()
    assert again.count("## torchvision, 2026-11-27") == 1 and "| 0.60 |" in again
    assert "kept" in again
