"""`tvmfork verify`'s verdicts, from real pytest runs of small test files.

Each case is a test module as a regression test could be written, run the way verify runs a
side (a pytest subprocess writing a JUnit report). `tvmlib` stands in for TVM: an error raised
inside it is the bug showing; an error in the test's own code is a test that cannot run.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tvmfork import verify

pytestmark = pytest.mark.unit

LIB = """
def compute(x, **kw):
    if kw:
        raise TypeError(f"compute() got an unexpected keyword argument {next(iter(kw))!r}")
    if x < 0:
        raise RuntimeError("InternalError: Check failed: x >= 0")
    return x * 2
"""


def _side(tmp_path: Path, body: str, timeout: float = 60) -> verify.Outcome:
    (tmp_path / "tvmlib.py").write_text(LIB)
    test = tmp_path / "tests" / "regression" / "test_case.py"
    test.parent.mkdir(parents=True, exist_ok=True)
    test.write_text(textwrap.dedent(body))
    env = {"PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    return verify.run_tests(Path(sys.executable), [str(test)], tmp_path, env, timeout)


def test_a_failing_assertion_is_fail(tmp_path: Path) -> None:
    out = _side(tmp_path, "import tvmlib\ndef test_x():\n    assert tvmlib.compute(2) == 5\n")
    assert out.status == verify.FAIL and out.failed


def test_an_error_raised_inside_the_library_is_fail(tmp_path: Path) -> None:
    out = _side(tmp_path, "import tvmlib\ndef test_x():\n    tvmlib.compute(-1)\n")
    assert out.status == verify.FAIL


def test_a_passing_test_is_pass(tmp_path: Path) -> None:
    out = _side(tmp_path, "import tvmlib\ndef test_x():\n    assert tvmlib.compute(2) == 4\n")
    assert out.status == verify.PASS and out.passed and not out.failed


def test_an_import_error_in_the_body_is_error_not_fail(tmp_path: Path) -> None:
    out = _side(tmp_path, "def test_x():\n    import tvm_missing_module\n")
    assert out.status == verify.ERROR and not out.failed
    assert "test_x" in out.detail


def test_a_keyword_only_the_fork_has_is_error(tmp_path: Path) -> None:
    """The test calls what this TVM lacks: the TypeError is raised at the call in the test."""
    body = "import tvmlib\ndef test_x():\n    tvmlib.compute(2, skip_simplify=True)\n"
    out = _side(tmp_path, body)
    assert out.status == verify.FAIL  # raised inside tvmlib: the library's own check

    body = "import tvmlib\ndef test_x():\n    tvmlib.compute_fast(2)\n"
    assert _side(tmp_path, body).status == verify.ERROR  # AttributeError in the test file

    body = "def f(a):\n    return a\ndef test_x():\n    f(1, skip_simplify=True)\n"
    assert _side(tmp_path, body).status == verify.ERROR  # TypeError raised in the test file


def test_a_type_error_raised_in_tvms_cpp_is_fail() -> None:
    """TVM's FFI raises TypeError from C++ (a type check of an op): the bug, not a test that
    cannot run. pytest's traceback then ends in the C++ file."""
    text = (
        "tests/regression/test_x.py:40: in test_pow\n    from_onnx(model)\n"
        "python/tvm_ffi/cython/function.pxi:1038: in tvm_ffi.core.Function.__call__\n"
        "    ???\nE   TypeError: Binary operators must have the same datatype\n\n"
        "/project/src/relax/op/distributed/../op_common.h:333: TypeError"
    )
    message = "TypeError: Binary operators must have the same datatype"
    assert verify.classify_failure(message, text, "tests/regression/test_x.py") == verify.FAIL
    in_test = "tests/regression/test_x.py:12: TypeError"
    assert verify.classify_failure(message, in_test, "tests/regression/test_x.py") == verify.ERROR


# stands in for tvm_ffi's Map: a missing key raises KeyError inside its accessor module
CONTAINER = """
class Map(dict):
    def __getitem__(self, k):
        if k not in self.keys():
            raise KeyError("key is not in Map")
        return dict.__getitem__(self, k)
"""


def _with_container(tmp_path: Path) -> None:
    (tmp_path / "tvm_ffi").mkdir(exist_ok=True)
    (tmp_path / "tvm_ffi" / "__init__.py").write_text("")
    (tmp_path / "tvm_ffi" / "container.py").write_text(CONTAINER)


def test_a_key_the_test_looks_up_in_a_tvm_map_is_error(tmp_path: Path) -> None:
    """`main.attrs["mutated_buffers"]` on a TVM that never sets it: the test asks for a
    fork-only name, which proves nothing about the bug."""
    _with_container(tmp_path)
    body = """
        from tvm_ffi.container import Map
        def test_x():
            attrs = Map(global_symbol="main")
            names = list(attrs["mutated_buffers"])
    """
    out = _side(tmp_path, body)
    assert out.status == verify.ERROR and "key is not in Map" in out.detail


def test_a_lookup_in_a_helper_under_tests_is_error(tmp_path: Path) -> None:
    _with_container(tmp_path)
    helper = tmp_path / "tests" / "regression" / "helper.py"
    helper.parent.mkdir(parents=True, exist_ok=True)
    helper.write_text("from tvm_ffi.container import Map\ndef names(a):\n    return a['x']\n")
    body = """
        import sys, os
        sys.path.insert(0, os.path.dirname(__file__))
        import helper
        from tvm_ffi.container import Map
        def test_x():
            helper.names(Map())
    """
    assert _side(tmp_path, body).status == verify.ERROR


def test_a_key_error_inside_tvm_is_fail(tmp_path: Path) -> None:
    """The same missing key looked up by TVM's own code (a pass reading an attribute): the
    bug, not the test."""
    _with_container(tmp_path)
    (tmp_path / "tvmpass.py").write_text(
        "from tvm_ffi.container import Map\ndef run():\n    return Map()['relax.x']\n"
    )
    body = "import tvmpass\ndef test_x():\n    tvmpass.run()\n"
    assert _side(tmp_path, body).status == verify.FAIL


def test_a_missing_global_function_looked_up_by_the_test_is_error() -> None:
    text = (
        "tests/regression/test_x.py:9: in test_x\n    f = tvm.get_global_func('relax.y')\n"
        "/venv/site-packages/tvm_ffi/registry.py:223: in get_global_func\n"
        "    return core._get_global_func(name, allow_missing)\n"
        "python/tvm_ffi/cython/function.pxi:1174: in tvm_ffi.core._get_global_func\n"
        "    ???\nE   ValueError: Cannot find global function relax.y\n\n"
        "python/tvm_ffi/cython/function.pxi:1174: ValueError"
    )
    message = "ValueError: Cannot find global function relax.y"
    assert verify.classify_failure(message, text, "tests/regression/test_x.py") == verify.ERROR
    # a ValueError TVM raises when the test calls a compiled function: the bug
    called = (
        "tests/regression/test_x.py:9: in test_x\n    vm['main'](x)\n"
        "python/tvm_ffi/cython/function.pxi:1038: in tvm_ffi.core.Function.__call__\n"
        "    ???\nE   ValueError: shape mismatch\n\n/project/src/runtime/vm.cc:12: ValueError"
    )
    assert verify.classify_failure("ValueError: shape", called, "tests/regression/test_x.py") == (
        verify.FAIL
    )


def test_a_fixture_error_is_error(tmp_path: Path) -> None:
    body = """
        import pytest
        @pytest.fixture
        def broken():
            raise RuntimeError("no device")
        def test_x(broken):
            assert False
    """
    assert _side(tmp_path, body).status == verify.ERROR


def test_a_collection_error_and_nothing_collected_are_error(tmp_path: Path) -> None:
    assert _side(tmp_path, "import tvm_missing_module\n").status == verify.ERROR
    out = _side(tmp_path, "X = 1\n")
    assert out.status == verify.ERROR and "no test ran" in out.detail


def test_all_skipped_is_error(tmp_path: Path) -> None:
    body = "import pytest\n@pytest.mark.skip(reason='x')\ndef test_x():\n    pass\n"
    assert _side(tmp_path, body).status == verify.ERROR


def test_a_timeout_is_timeout(tmp_path: Path) -> None:
    out = _side(tmp_path, "import time\ndef test_x():\n    time.sleep(30)\n", timeout=3)
    assert out.status == verify.TIMEOUT and not out.failed


def test_an_abort_is_a_crash_and_the_oom_killer_is_error(tmp_path: Path) -> None:
    out = _side(tmp_path, "import os\ndef test_x():\n    os.abort()\n")
    assert out.status == verify.CRASH and out.failed and out.detail == "SIGABRT"
    body = "import os, signal\ndef test_x():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    out = _side(tmp_path, body)
    assert out.status == verify.ERROR and out.detail == "SIGKILL"


def test_one_error_among_failures_is_error(tmp_path: Path) -> None:
    body = """
        import tvmlib
        def test_bug():
            assert tvmlib.compute(2) == 5
        def test_broken():
            import tvm_missing_module
    """
    assert _side(tmp_path, body).status == verify.ERROR


def _o(status: str) -> verify.Outcome:
    return verify.Outcome(status)


@pytest.mark.parametrize(
    ("stock", "fork", "verdict"),
    [
        (verify.FAIL, verify.PASS, "ok: needed and sufficient"),
        (verify.CRASH, verify.PASS, "ok: needed and sufficient"),
        (verify.PASS, verify.PASS, "NOT NEEDED: passes on stock"),
        (verify.ERROR, verify.PASS, "UNPROVEN: stock ERROR"),
        (verify.TIMEOUT, verify.PASS, "UNPROVEN: stock TIMEOUT"),
        (verify.FAIL, verify.FAIL, "BROKEN: fork FAIL"),
        (verify.FAIL, verify.ERROR, "BROKEN: fork ERROR"),
    ],
)
def test_row_verdicts(stock: str, fork: str, verdict: str) -> None:
    row = verify.Row("p.patch", ("t.py",), _o(stock), _o(fork))
    assert row.verdict == verdict
    assert row.ok == verdict.startswith("ok")


def test_rows_not_run_and_stock_only() -> None:
    assert verify.Row("p", (), None, None, "native").verdict == "not run: native"
    row = verify.Row("p", (), _o(verify.FAIL), None, "no overlay")
    assert row.verdict.startswith("needed (stock FAIL)")
    assert verify.Row("p", (), _o(verify.ERROR), None, "x").verdict.startswith("UNPROVEN")


def test_jobs_run_apart_a_crash_and_a_timeout_stop_only_their_own(tmp_path: Path) -> None:
    """Many jobs through one test server: each in its own fork, so a module a test changes
    (numpy, which the server imported) is fresh in the next job, an abort is that job's
    CRASH, and a job past its timeout is TIMEOUT while the others finish."""
    (tmp_path / "tvmlib.py").write_text(LIB)
    bodies = {
        "leak": "import numpy\ndef test_x():\n    numpy.LEAKED = 1\n",
        "fresh": "import numpy\ndef test_x():\n    assert not hasattr(numpy, 'LEAKED')\n",
        "abort": "import os\ndef test_x():\n    os.abort()\n",
        "slow": "import time\ndef test_x():\n    time.sleep(60)\n",
        "bug": "import tvmlib\ndef test_x():\n    tvmlib.compute(-1)\n",
    }
    jobs = []
    for name, body in bodies.items():
        test = tmp_path / "tests" / f"test_{name}.py"
        test.parent.mkdir(parents=True, exist_ok=True)
        test.write_text(body)
        jobs.append(verify.Job(name, Path(sys.executable), (str(test),)))
    env = {"PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    seen: list[str] = []
    done = seen.append
    # one at a time, in order: "fresh" runs after "leak" has changed numpy in its own fork
    out = verify.run_jobs(jobs, tmp_path, env, 8, slots=1, on_done=lambda j, o, s: done(j.key))
    assert seen == list(bodies)
    assert {k: o.status for k, o in out.items()} == {
        "leak": verify.PASS,
        "fresh": verify.PASS,
        "abort": verify.CRASH,
        "slow": verify.TIMEOUT,
        "bug": verify.FAIL,
    }


def test_a_server_is_closed_when_no_job_is_left_for_it(tmp_path: Path, monkeypatch) -> None:
    """`verify --alone` runs each overlay's jobs on a server of its own (a PYTHONPATH each):
    a server is closed once its last job is done, not kept to the end of the run."""
    test = tmp_path / "tests" / "test_ok.py"
    test.parent.mkdir(parents=True)
    test.write_text("def test_x():\n    pass\n")
    live: set[int] = set()
    most = [0]

    class Counted(verify._Server):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            live.add(id(self))
            most[0] = max(most[0], len(live))

        def close(self, kill: bool) -> None:
            live.discard(id(self))
            super().close(kill)

    monkeypatch.setattr(verify, "_Server", Counted)
    jobs = [
        verify.Job(f"{name}/{side}", Path(sys.executable), (str(test),), str(tmp_path / name))
        for name in ("a", "b", "c")
        for side in ("without", "with")
    ]
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    out = verify.run_jobs(jobs, tmp_path, env, 30, slots=1)
    assert {o.status for o in out.values()} == {verify.PASS} and len(out) == 6
    assert most[0] == 1 and not live


def test_a_release_table_sorts_each_patch_by_what_it_shows() -> None:
    """`verify --against R --table FILE`: needed / not in the overlay / absorbed / broken /
    unproven / not run, counted, one row per patch."""
    o = verify.Outcome
    rows = [
        verify.Row("a.patch", ("t",), o(verify.FAIL), o(verify.PASS)),
        verify.Row("b.patch", ("t",), o(verify.FAIL), None, "does not apply to r.whl"),
        verify.Row("c.patch", ("t",), o(verify.PASS), o(verify.PASS)),
        verify.Row("d.patch", ("t",), o(verify.FAIL), o(verify.FAIL)),
        verify.Row("e.patch", ("t",), o(verify.ERROR, detail="x | y"), o(verify.PASS)),
        verify.Row("f.patch", ("t",), None, None, "native patch: needs a source build"),
    ]
    kinds = [verify.kind(r) for r in rows]
    assert kinds == [
        "needed",
        "needed, not in the overlay",
        "absorbed",
        "broken on the release",
        "unproven",
        "not run",
    ]
    page = verify.markdown(rows, "Patches still needed on r", ["how"])
    assert page.startswith("# Patches still needed on r\n\nhow\n")
    assert "| needed | 1 |" in page and "| absorbed | 1 |" in page
    assert (
        "| `b` | FAIL | - | needed, not in the overlay | needed (stock FAIL); fork not run: "
        "does not apply to r.whl |"
    ) in page
    assert "x \\| y" in page  # a cell's | does not split the row
