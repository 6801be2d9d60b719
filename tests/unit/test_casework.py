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
    # ... but not below the smallest normal number: subnormal outputs 5% apart are noise,
    # normal ones 5% apart are wrong
    tiny = np.finfo(np.float32).tiny
    sub = np.array([3e-42, -1e-42], dtype="float32")
    assert compare([sub * np.float32(1.05)], [sub], 0, 0, 1e-3)[0] == ""
    normal = np.array([3.0, -1.0], dtype="float32") * tiny * 1000
    assert "relative max error" in compare([normal * np.float32(1.05)], [normal], 0, 0, 1e-3)[0]
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


def test_opinfo_accepts_another_index_only_among_tied_values() -> None:
    np = pytest.importorskip("numpy")
    from tvmfork.conformance.casework.judge import tied_at
    from tvmfork.conformance.casework.opinfo import tie_axis

    def tied_indices(key, x, args, kwargs, got, want):  # type: ignore[no-untyped-def]
        # as run_opinfo's check does it: the op's axis, then the tied indices along it
        axis = tie_axis(key, x, args, kwargs)
        return got if axis is None else tied_at(got, want, *axis)

    x = np.array([[3.0, 1.0, 3.0], [2.0, 5.0, 4.0]])
    want = [np.array([3.0, 5.0]), np.array([0, 1])]
    # max(dim=1): row 0 ties at 0 and 2, so index 2 is as right as 0
    tied = [np.array([3.0, 5.0]), np.array([2, 1])]
    fixed = tied_indices("max.reduction_with_dim", x, (1,), {}, tied, want)
    assert np.array_equal(fixed[1], want[1])
    # an index at a smaller value is wrong, and stays so for `compare`
    off = [np.array([3.0, 5.0]), np.array([1, 1])]
    assert np.array_equal(tied_indices("max.reduction_with_dim", x, (1,), {}, off, want)[1], off[1])
    # the dimension by keyword, negative; ops that return no indices are left alone
    sort_want = [np.array([[1.0, 3.0, 3.0]]), np.array([[1, 0, 2]])]
    sort_got = [sort_want[0], np.array([[1, 2, 0]])]
    fixed = tied_indices("sort", x[:1], (), {"dim": -1}, sort_got, sort_want)
    assert np.array_equal(fixed[1], sort_want[1])
    assert tied_indices("add", x, (), {}, off, want) is off


def test_opinfo_compares_each_output_at_its_own_dtype() -> None:
    np = pytest.importorskip("numpy")
    from tvmfork.conformance.casework.judge import by_output_dtype

    # a bool sample's float64 softmax: float64's tolerance, not the exactness of bools
    want = [np.array([0.25, 0.0]), np.array([True, False])]
    assert by_output_dtype([want[0] + 1e-17, want[1]], want) == ""
    assert "output 1: values differ" in by_output_dtype([want[0], ~want[1]], want)
    half = np.array([1.0, 2.0], dtype="float16")
    assert by_output_dtype([half + np.float16(0.001)], [half]) == ""  # within float16's
    assert "output 0" in by_output_dtype([half + np.float16(0.1)], [half])
    assert "2 outputs, expected 1" in by_output_dtype([half, half], [half])


def test_half_precision_results_are_held_to_the_exact_result_as_eager_is() -> None:
    np = pytest.importorskip("numpy")
    from tvmfork.conformance.casework.compare import as_accurate
    from tvmfork.conformance.casework.judge import no_less_accurate

    # opinfo: eager's float16 is 12 steps off where the fork's is exact: no less accurate
    exact = [np.array([-0.18290667, 1.0])]
    eager = [np.array([-0.184326, 1.0], dtype="float16")]
    fork = [np.array([-0.182861, 1.0], dtype="float16")]
    assert no_less_accurate(fork, eager, exact) == ""
    # ... and the other way round is not
    assert "farther from the float64 result" in no_less_accurate(eager, fork, exact)
    assert "dtype" in no_less_accurate([fork[0].astype("float32")], eager, exact)
    # models: within twice PyTorch's error to the float32 computation plus 5 bfloat16 steps
    truth = [np.linspace(-1.0, 1.0, 8)]
    torch_bf16 = [truth[0] * 1.05]  # PyTorch itself 5% off (as cpmant in bfloat16)
    close = [truth[0] * 0.92]
    assert as_accurate(close, torch_bf16, truth, "bfloat16")[0] == ""
    problem, errors = as_accurate([truth[0] * 0.8], torch_bf16, truth, "bfloat16")
    assert "to the float32 computation" in problem
    assert errors["torch_rel_err_vs_float32"] == pytest.approx(0.05)
    # no half-precision model: nothing to hold to
    assert as_accurate(close, torch_bf16, truth, "float32")[0] != ""
    # PyTorch 1% off on these inputs but 4% on a nearby one: its error is 4%, so 8% passes
    lucky = [truth[0] * 1.01]
    assert "allowed: 0.0395" in as_accurate([truth[0] * 0.92], lucky, truth, "bfloat16")[0]
    nearby = [([truth[0] * 1.02], truth), ([truth[0] * 0.96], truth)]
    problem, errors = as_accurate([truth[0] * 0.92], lucky, truth, "bfloat16", nearby)
    assert problem == ""
    assert errors["torch_rel_err_nearby"] == pytest.approx(0.04)
    # ... and a wrong result stays wrong
    assert "nearby inputs" in as_accurate([truth[0] * 0.8], lucky, truth, "bfloat16", nearby)[0]
