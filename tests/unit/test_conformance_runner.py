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
