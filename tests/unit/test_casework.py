"""The worker's parts alone, without a TVM venv: results compared with the reference as ONNX's
runner compares them, and a target name resolved by the one table."""

from __future__ import annotations

import json

import pytest

from tvmfork.conformance.casework import case, targets

pytestmark = pytest.mark.unit


def test_compare_checks_count_shape_dtype_then_values() -> None:
    np = pytest.importorskip("numpy")  # tvmfork's dev venv has it (matplotlib's)
    from tvmfork.conformance.casework.compare import compare, leaves

    a = np.arange(6, dtype="float32").reshape(2, 3)
    assert compare([a], [a.copy()], 1e-3, 1e-5, 0.0) == ("", 0.0)
    assert compare([a, a], [a], 1e-3, 1e-5, 0.0)[0] == "2 outputs, expected 1"
    assert "shape (3, 2)" in compare([a.reshape(3, 2)], [a], 1e-3, 1e-5, 0.0)[0]
    assert "dtype float64" in compare([a.astype("float64")], [a], 1e-3, 1e-5, 0.0)[0]
    off = a.copy()
    off[1, 2] += 1
    assert "Mismatched elements: 1 / 6" in compare([off], [a], 1e-3, 1e-5, 0.0)[0]
    # relative to the largest value: 1 off on a largest of 5 is 0.2
    problem, worst = compare([off], [a], 0, 0, 1e-3)
    assert "relative max error 0.2" in problem and worst == pytest.approx(0.2)
    nan = a.copy()
    nan[0, 0] = np.nan
    assert "NaN at 1 element(s)" in compare([nan], [a], 0, 0, 1e-3)[0]  # NaN is never close
    assert compare([nan], [nan.copy()], 0, 0, 1e-3)[0] == ""  # where the reference has it
    inf = np.array([np.inf, -np.inf, np.nan])
    swapped = np.array([-np.inf, np.inf, np.nan])
    for mode in ((1e-3, 1e-5, 0.0), (0, 0, 1e-3)):  # infinities by sign, in both modes
        assert "+inf" in compare([swapped], [inf], *mode)[0]
        assert compare([inf.copy()], [inf], *mode)[0] == ""  # all non-finite: still compared
    # integers exactly: an index off by one is wrong even where its size is within rtol
    idx = np.array([1000, 7], dtype="int64")
    off_by_one = np.array([1001, 7], dtype="int64")
    assert "values differ (1 of 2)" in compare([off_by_one], [idx], 1e-3, 1e-5, 0.0)[0]
    assert "values differ" in compare([off_by_one], [idx], 0, 0, 1e-2)[0]

    class Tensor:  # a runtime tensor: leaves takes what .numpy() gives
        def __init__(self, x: object) -> None:
            self.x = x

        def numpy(self) -> object:
            return self.x

    nested = {"a": (Tensor(a[0]), [Tensor(a[1])])}
    assert [x.tolist() for x in leaves(nested)] == [a[0].tolist(), a[1].tolist()]


def test_an_error_keeps_its_telling_line() -> None:
    exc = RuntimeError(
        "Traceback:\n  frame\nInternalError: Check failed: (x) is false: why\n  at y"
    )
    assert case.last_line(exc) == "RuntimeError: InternalError: Check failed: (x) is false: why"
    compiler = RuntimeError("Compilation error:\ng++ -o a.so\na.cc:1: error: bad\nmore")
    assert case.last_line(compiler) == "RuntimeError: a.cc:1: error: bad"


def test_the_target_table_is_what_the_options_resolve() -> None:
    assert json.loads(targets.TARGETS["portable"].worker)["mcpu"] == ",".join(targets.X86_LEVELS)
    assert {t.runs for t in targets.TARGETS.values()} == {"here", "rpc", "assemble"}
    assert all(name in targets.describe() for name in targets.TARGETS)
