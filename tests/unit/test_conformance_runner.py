"""The conformance runner's isolation, with fake workers (no TVM): a hang is a timeout, a
segfault whose backtrace printer outlives the limit is a crash, and a fresh worker takes the
next case."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tvmfork.conformance.runner import CaseSpec, Worker

pytestmark = pytest.mark.unit

FAKE = """#!{python}
import json, sys, time
print(json.dumps({{"ready": True}}), flush=True)
for line in sys.stdin:
    name = json.loads(line)["name"]
    print(json.dumps({{"stage": "compile"}}), flush=True)
    if name == "segfault":
        print("!!!!!!! Segfault encountered !!!!!!!", file=sys.stderr, flush=True)
        time.sleep(60)  # symbolizing the backtrace of a large library
    if name == "hang":
        time.sleep(60)
    result = {{"status": "ok", "stage": "ok", "error": "", "compile_s": 1.5}}
    print(json.dumps({{"result": result}}), flush=True)
"""


@pytest.fixture
def worker(tmp_path: Path) -> Worker:
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    return Worker("fork", fake, tmp_path / "fork.log", {})


def _case(name: str) -> CaseSpec:
    return CaseSpec("s", name, {"name": name}, timeout=2.0)


def test_hang_segfault_then_a_fresh_worker(worker: Worker) -> None:
    try:
        hang = worker.run(_case("hang"))
        assert (hang.status, hang.stage, hang.error) == (
            "timeout",
            "compile",
            "no result after 2 s",
        )
        crash = worker.run(_case("segfault"))
        assert (crash.status, crash.stage) == ("crash", "compile")
        assert "SIGSEGV" in crash.error
        ok = worker.run(_case("fine"))
        assert (ok.status, ok.times) == ("ok", {"compile_s": 1.5})
    finally:
        worker.stop()


@pytest.mark.parametrize(("threads", "calls_per_rep"), [("1", 1), ("", 1), ("2", 2)])
def test_timing_settles_each_runtime_when_threads_compete(
    monkeypatch: pytest.MonkeyPatch, threads: str, calls_per_rep: int
) -> None:
    """With more than one thread, each timed call follows an untimed one of the same runtime
    (the one before it may still hold the cores); with one, the calls simply alternate."""
    from tvmfork.conformance import worker as w

    monkeypatch.setenv("TVMFORK_THREADS", threads)
    order: list[str] = []
    fns = {"torch": lambda: order.append("torch"), "tvm": lambda: order.append("tvm")}
    times = w.interleaved(fns, reps=3, budget_s=60.0)
    assert set(times) == {"torch_ms", "tvm_ms"}
    assert order[:2] == ["torch", "tvm"]  # one warm-up each
    per_rep = ["torch"] * calls_per_rep + ["tvm"] * calls_per_rep
    assert order[2:] == per_rep * 3


def test_an_export_error_names_torchs_reason() -> None:
    """torch.export's refusal ends with a hint; the report keeps its first line and first
    detail (the guard that failed), which tells a user why."""
    from tvmfork.conformance import worker as w

    exc = RuntimeError(
        "Constraints violated (seq)! For more information, run with TORCH_LOGS=...\n"
        "  - Not all values of seq in the specified range seq <= 128 satisfy the generated "
        "guard 7 <= seq\nSuggested fixes:\n  seq = Dim('seq', min=7, max=128)\n\n"
        "The error above occurred when calling torch.export.export."
    )
    reason = w.export_reason(exc)
    assert reason.startswith("RuntimeError: Constraints violated (seq)!")
    assert "guard 7 <= seq" in reason and "The error above" not in reason
