"""The conformance runner's isolation, with fake workers (no TVM): a hang is a timeout, a
segfault whose backtrace printer outlives the limit is a crash, and a fresh worker takes the
next case."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tvmfork.conformance import report
from tvmfork.conformance.casework import spec, timing
from tvmfork.conformance.runner import CaseSpec, Result, Worker

pytestmark = pytest.mark.unit

FAKE = """#!{python}
import json, sys, time
print(json.dumps({{"ready": True}}), flush=True)
for line in sys.stdin:
    name = json.loads(line)["case"]["name"]
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
    return Worker("fork", fake, tmp_path / "fork.log", spec.RunConfig())


def _case(name: str) -> CaseSpec:
    return CaseSpec("s", name, spec.Spec(kind="torch", name=name), timeout=2.0)


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


@pytest.mark.parametrize(("threads", "calls_per_rep"), [(1, 1), (None, 1), (2, 2)])
def test_timing_settles_each_runtime_when_threads_compete(
    threads: int | None, calls_per_rep: int
) -> None:
    """With more than one thread, each timed call follows an untimed one of the same runtime
    (the one before it may still hold the cores); with one, the calls simply alternate."""
    order: list[str] = []
    fns = {"torch": lambda: order.append("torch"), "tvm": lambda: order.append("tvm")}
    times = timing.interleaved(fns, reps=3, budget_s=60.0, threads=threads)
    assert set(times) == {"torch_ms", "tvm_ms"}
    assert order[:2] == ["torch", "tvm"]  # one warm-up each
    per_rep = ["torch"] * calls_per_rep + ["tvm"] * calls_per_rep
    assert order[2:] == per_rep * 3


def test_an_export_error_names_torchs_reason() -> None:
    """torch.export's refusal ends with a hint; the report keeps its first line and first
    detail (the guard that failed), which tells a user why."""
    from tvmfork.conformance.casework import case

    exc = RuntimeError(
        "Constraints violated (seq)! For more information, run with TORCH_LOGS=...\n"
        "  - Not all values of seq in the specified range seq <= 128 satisfy the generated "
        "guard 7 <= seq\nSuggested fixes:\n  seq = Dim('seq', min=7, max=128)\n\n"
        "The error above occurred when calling torch.export.export."
    )
    reason = case.export_reason(exc)
    assert reason.startswith("RuntimeError: Constraints violated (seq)!")
    assert "guard 7 <= seq" in reason and "The error above" not in reason


def test_a_spec_round_trips_and_refuses_unknown_keys() -> None:
    s = spec.Spec(kind="onnx", model="m.onnx", rtol=1e-4, reps=3, budget_s=2.0)
    assert spec.Spec.from_json(s.to_json()) == s
    assert spec.Spec(kind="torch").atol == spec.Spec(kind="onnx").atol  # one set of defaults
    with pytest.raises(ValueError, match="unknown case spec key"):
        spec.Spec.from_json({"kind": "onnx", "tolerance": 1})
    with pytest.raises(ValueError, match="case kind"):
        spec.Spec(kind="tflite")


def test_a_result_round_trips_through_results_jsonl(tmp_path: Path) -> None:
    r = Result(
        "s", "c", "fork", "ok", "ok", "", {"tvm_ms": 1.25, "rel_err": 2e-7}, {"ort_error": "x"}
    )
    jsonl, _ = report.write([r], tmp_path)
    (back,) = report.load(jsonl)
    assert back == r
    assert Result.from_json(r.to_json()) == r


def test_the_run_configuration_travels_with_each_case(tmp_path: Path) -> None:
    """Every setting of a run reaches the worker inside each case's line, none through the
    environment: the fake worker echoes what it got, and its environment holds no
    CONFORMANCE_ variable; TVM's own thread variable is the one set from the run."""
    echo = tmp_path / "echo-python"
    echo.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "print(json.dumps({'ready': True, 'tvm': '9.9'}), flush=True)\n"
        "for line in sys.stdin:\n"
        "    got = json.loads(line)\n"
        "    env = sorted(k for k in os.environ if k.startswith('CONFORMANCE'))\n"
        "    result = {'status': 'ok', 'stage': 'ok', 'error': '', 'got': json.dumps(got),\n"
        "              'env': ','.join(env), 'tvm_threads': os.environ.get('TVM_NUM_THREADS')}\n"
        "    print(json.dumps({'result': result}), flush=True)\n"
    )
    echo.chmod(0o755)
    remote = spec.Remote("127.0.0.1:9190", "rk3588", "aarch64-linux-gnu-g++")
    config = spec.RunConfig(target="host", threads=2, extra_path="/x", remote=remote)
    worker = Worker("stock", echo, tmp_path / "stock.log", config)
    try:
        r = worker.run(_case("a"))
    finally:
        worker.stop()
    assert worker.ready == {"ready": True, "tvm": "9.9"}
    got = spec.Message.from_json(json.loads(r.notes["got"]))
    assert got == spec.Message(config, _case("a").spec)
    assert r.notes["env"] == "" and r.notes["tvm_threads"] == "2"


def test_a_run_configuration_round_trips_and_refuses_unknown_keys() -> None:
    config = spec.RunConfig("portable", 1, "", spec.Remote("h:1", "k"), ("sm_80", "sm_90"))
    assert spec.RunConfig.from_json(json.loads(json.dumps(config.to_json()))) == config
    with pytest.raises(ValueError, match="unknown run configuration key"):
        spec.RunConfig.from_json({"target": "llvm", "thread": 2})


def test_the_anchors_are_timed_on_the_fork_side_only() -> None:
    """ORT and torch.compile beside PyTorch eager cost an export or a compile per side; the
    speed table's ratios to them are the fork's, so the stock worker skips them. An ONNX
    case's ORT is its reference, not an anchor, and stays."""
    timed = spec.Spec(kind="torch", module="m.py", name="a", reps=5, ort=True, inductor=True)
    case = CaseSpec("s", "a", timed, 60.0)
    both = ["stock", "fork"]
    assert case.on_side("fork", both) is case
    stock = case.on_side("stock", both).spec
    assert (stock.ort, stock.inductor, stock.reps) == (False, False, 5)
    assert case.on_side("stock", ["stock"]) is case  # a stock-only run keeps its anchors
    onnx = CaseSpec("s", "b", spec.Spec(kind="onnx", model="m.onnx", ort=True), 60.0)
    assert onnx.on_side("stock", both).spec.ort
