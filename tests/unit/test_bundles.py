"""Bundles without TVM: a case's calls written and read back as the device's runner reads them
(the same verdicts), the folder refused when it holds anything, the limit kept by leaving
cases out, and a device's results read back into the report's records. (The round trip with
TVM, on both sides, is the conformance lane's test_bundle.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tvmfork.conformance import bundles, report
from tvmfork.conformance.casework import bundle
from tvmfork.conformance.casework.judge import AS_ACCURATE, Check, Generation, verdict
from tvmfork.conformance.casework.spec import Spec
from tvmfork.conformance.runner import CaseSpec, Result
from tvmfork.errors import UsageError

pytestmark = pytest.mark.unit
np = pytest.importorskip("numpy")  # tvmfork's dev venv has it (matplotlib's)


def test_calls_read_back_as_written_and_judge_alike(tmp_path: Path) -> None:
    x = np.array([[3.0, 1.0, 3.0], [2.0, 5.0, 4.0]], dtype="float32")
    want = [np.array([3.0, 5.0], dtype="float32"), np.array([0, 1])]
    sort_like = Check(args=[x], want=want, per_dtype=True, ties=(x.astype("float64"), 1))
    wide = [np.array([1.0, 2.0], dtype="float32")]
    filled: list[int] = []

    def fill(check: Check) -> None:
        filled.append(1)
        check.exact = [wide[0] * 1.001]
        check.nearby = [([wide[0]], [wide[0] * 1.002])]

    model = Check(
        args=[np.arange(4, dtype="int64")],
        want=wide,
        rel_max=1e-3,
        fallback=AS_ACCURATE,
        model_dtype="bfloat16",
        label="size 4: ",
        fill=fill,
    )
    gen = Generation(np.array([[1, 2]], dtype="int64"), [np.zeros((2, 2), "float32")], 3, [5, 6, 7])
    w = bundle.Writer(tmp_path / "case")
    for call in (sort_like, model, gen):
        w.add(call)
    w.close({"tvm_target": "llvm"})
    assert filled == [1]  # a bundled check's fallback is computed here, once
    got_sort, got_model, got_gen = bundle.read(tmp_path / "case")
    assert isinstance(got_sort, Check) and isinstance(got_model, Check)
    assert isinstance(got_gen, Generation) and got_gen.want == [5, 6, 7] and got_gen.count == 3
    assert got_gen.prompt.dtype == np.int64 and got_gen.state[0].shape == (2, 2)
    assert got_model.label == "size 4: " and got_model.exact is not None
    assert got_model.args[0].dtype == np.int64
    # a tied index (2 for 0: both point at 3.0) holds, a wrong one does not, after the trip
    tied = [want[0], np.array([2, 1])]
    wrong = [want[0], np.array([1, 1])]
    for check in (sort_like, got_sort):
        assert verdict(tied, check)[0] == ""
        assert "output 1: values differ" in verdict(wrong, check)[0]
    # off by 0.5%: past rel_max, within twice PyTorch's distance to float32 plus bf16's floor
    off = [wide[0] * 1.005]
    assert verdict(off, model) == verdict(off, got_model)
    problem, info = verdict(off, got_model)
    assert problem == "" and info["rel_err_vs_float32"] == pytest.approx(0.004, rel=0.01)
    assert verdict([wide[0] * 2], got_model)[0].startswith("size 4: output 0: relative max")


def test_a_bundle_folder_must_be_new(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    with pytest.raises(UsageError, match="exists and is not empty"):
        bundles.Plan(tmp_path / "full", 64 * bundles.MIB, "3.12").check()
    with pytest.raises(UsageError, match=r"give a version such as 3\.12"):
        bundles.Plan(tmp_path / "new", 64 * bundles.MIB, "3").check()
    bundles.Plan(tmp_path / "new", 64 * bundles.MIB, "3.12").check()
    assert (tmp_path / "full" / "x").read_text() == "keep me"


def _case(name: str) -> CaseSpec:
    return CaseSpec("s", name, Spec(kind="onnx"), 60.0)


def _bundled(folder: Path, side: str, name: str, size: int) -> Result:
    where = folder / bundle.case_folder(side, "s", name)
    where.mkdir(parents=True)
    (where / bundle.LIBRARY).write_bytes(os.urandom(size))  # as a library: hardly compressible
    return Result("s", name, side, "bundled", "bundled")


def test_pack_leaves_out_what_passes_the_limit_and_reads_back(tmp_path: Path) -> None:
    plan = bundles.Plan(tmp_path / "b", 3 * bundles.MIB, "3.12")
    half = bundles.MIB // 2
    results = [
        _bundled(plan.folder, "stock", "small", half // 2),
        _bundled(plan.folder, "fork", "small", half // 2),
        _bundled(plan.folder, "stock", "big", 2 * bundles.MIB),
        _bundled(plan.folder, "fork", "big", 2 * bundles.MIB),
        Result("s", "broken", "stock", "bundled", "bundled"),
        Result("s", "broken", "fork", "error", "import", "no such op"),
        _bundled(plan.folder, "stock", "last", half),
        _bundled(plan.folder, "fork", "last", half),
    ]
    (plan.folder / bundle.case_folder("stock", "s", "broken")).mkdir(parents=True)
    header = report.Header(sides={"stock": {"tvm": "0.26.0"}, "fork": {"tvm": "0.26.0+f"}})
    cases = [_case(n) for n in ("small", "big", "broken", "last")]
    packed = bundles.pack(plan, cases, results, ["stock", "fork"], [], header, "cuda")
    assert packed.size <= plan.limit
    assert "LEFT OUT (over the limit): 1: s/big (4.0 MiB)" in packed.lines
    manifest = json.loads((plan.folder / "manifest.json").read_text())
    assert [c["case"] for c in manifest["cases"]] == ["small", "broken", "last"]
    assert not list((plan.folder / "cases").glob("*/s-big-*"))  # neither folder nor zip
    assert not [p for p in (plan.folder / "cases").glob("*/*") if p.is_dir()]  # all zipped
    assert manifest["cases"][0]["folders"]["fork"].endswith(".zip")
    big = [r for r in packed.results if r.case == "big"]
    assert [r.status for r in big] == ["not run", "not run"]

    # the device ran two of the three sides' cases it was given (not `last` on the fork)
    out = plan.folder / "device"
    out.mkdir()
    for name in ("manifest.json", "build.jsonl"):
        (out / name).write_text((plan.folder / name).read_text())
    ran = [
        {"suite": "s", "case": "small", "side": "stock", "status": "ok", "stage": "ok"},
        {"suite": "s", "case": "small", "side": "fork", "status": "wrong", "stage": "numerics",
         "error": "output 0: values differ", "tvm": "0.26.0+f"},
        {"suite": "s", "case": "broken", "side": "stock", "status": "ok", "stage": "ok"},
        {"suite": "s", "case": "last", "side": "stock", "status": "crash", "stage": "run"},
    ]  # fmt: skip
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ran))
    head, merged = bundles.read_back(plan.folder)  # the bundle's device/ is found
    got = {(r.case, r.side): (r.status, r.stage) for r in merged}
    assert got == {
        ("small", "stock"): ("ok", "ok"),
        ("small", "fork"): ("wrong", "numerics"),
        ("big", "stock"): ("not run", ""),
        ("big", "fork"): ("not run", ""),
        ("broken", "stock"): ("ok", "ok"),
        ("broken", "fork"): ("error", "import"),  # as the build left it
        ("last", "stock"): ("crash", "run"),
        ("last", "fork"): ("not run", "bundled"),
    }
    assert "the device did not run it" in {r.error for r in merged}
    assert "run from a bundle on a cuda device" in head.context
    assert [r.case for r in report.fork_wrong(merged)] == ["small"]


def test_reading_back_a_folder_without_results_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no manifest\.json"):
        bundles.read_back(tmp_path)
