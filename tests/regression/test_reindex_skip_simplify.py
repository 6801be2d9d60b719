"""dlight / schedule: `normalize_to_matmul`-style code on 1x1 convolutions (BUGS.md section 2).

BitBLAS, TileLang and older dlight compute a matmul's index maps from the original block, then
`sch.reindex` each operand, then `sch.transform_layout` with those maps. On stock 0.26.0 the
reindex simplifies the unit kernel iterators of a 1x1 conv away, the reindexed buffer loses
dimensions, and `transform_layout` stops with "Check failed: (args.size() ==
initial_indices_orig.size())". The fork's `reindex(..., skip_simplify=True)` keeps them.

dlight's own matmul rules reindex before computing their maps (upstream 090430a284, #17363),
so `test_dlight_pipeline_compiles_to_cuda` passes on stock as on the fork: it guards that the
rules keep compiling 1x1 convolutions, and proves no patch (patches/README.md, Retired).

Every schedule runs in a subprocess, so a crash is a failed test, not a lost run. Numerics
against PyTorch need a CUDA device (`gpu` marker).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import inspect, json, sys
import numpy as np
import tvm
from tvm import relax, s_tir
from tvm.s_tir import dlight as dl
from tvm.s_tir.dlight.gpu.matmul import get_index_map

case = json.loads(sys.argv[1])
what = sys.argv[2]
ndim = len(case["x"]) - 2
bb = relax.BlockBuilder()
x = relax.Var("x", relax.TensorType(case["x"], case["dtype"]))
w = relax.Var("w", relax.TensorType(case["w"], case["dtype"]))
params = [x, w]
layout = case.get("layout", "NCHW" if ndim == 2 else "NCDHW")
kernel = case.get("kernel", "OIHW" if ndim == 2 else "OIDHW")
conv = relax.op.nn.conv2d if ndim == 2 else relax.op.nn.conv3d
with bb.function("main", params):
    with bb.dataflow():
        y = bb.emit(conv(x, w, strides=case.get("stride", 1), data_layout=layout,
                         kernel_layout=kernel, out_dtype=case["dtype"]))
        if case.get("bias_relu"):
            b = relax.const(np.linspace(-1, 1, case["w"][0]).astype(case["dtype"]))
            y = bb.emit(relax.op.nn.relu(relax.op.add(y, relax.op.reshape(b, (1, -1, 1, 1)))))
        out = bb.emit_output(y)
    bb.emit_func_output(out)
mod = relax.transform.LegalizeOps()(bb.get())
conv_name = next(gv for gv in mod.functions if gv.name_hint.startswith("conv"))

if what == "sequence":
    sch = s_tir.Schedule(mod[conv_name])
    root = sch.get_sblock("root")
    block = next(b for b in sch.get_child_blocks(root)
                 if any(iv.iter_type == 2 for iv in sch.get(b).iter_vars))
    maps = get_index_map(sch.get(block))  # from the original block, as BitBLAS does
    assert maps is not None, "not recognized as a matmul"
    kw = {}
    if "skip_simplify" in inspect.signature(sch.reindex).parameters:
        kw["skip_simplify"] = True
    print("reindex keywords:", kw)
    ra = sch.reindex(block, ("read", 0), **kw)
    rb = sch.reindex(block, ("read", 1), **kw)
    rc = sch.reindex(block, ("write", 0), **kw)
    sch.transform_layout(ra, ("write", 0), maps[1])
    sch.transform_layout(rb, ("write", 0), maps[2])
    sch.transform_layout(rc, ("read", 0), maps[3])
    sch.transform_block_layout(block, maps[0])
    stmt = sch.get(block)
    print(json.dumps([len(stmt.iter_vars)] + [len(r.buffer.shape) for r in stmt.reads]))
elif what in ("cuda", "run"):
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_80"})
    with target:
        mod = relax.get_pipeline("zero")(mod)
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                      dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
    ex = tvm.compile(mod, target=target)

    def modules(m):
        yield m
        for sub in m.imports:
            yield from modules(sub)

    src = "".join(m.inspect_source() for m in modules(ex.mod) if m.kind == "cuda")
    print("kernels:", src.count("__global__"))
    if what == "run":
        import torch
        rng = np.random.default_rng(0)
        xs = rng.standard_normal(case["x"]).astype(case["dtype"])
        ws = (rng.standard_normal(case["w"]) * 0.05).astype(case["dtype"])
        dev = tvm.cuda(0)
        vm = relax.VirtualMachine(ex, dev)
        got = vm["main"](tvm.runtime.tensor(xs, dev), tvm.runtime.tensor(ws, dev)).numpy()
        tx = torch.from_numpy(xs.astype("float32"))
        tw = torch.from_numpy(ws.astype("float32"))
        if layout == "NHWC":
            tx, tw = tx.permute(0, 3, 1, 2), tw.permute(0, 3, 1, 2)
        f = torch.nn.functional.conv2d if ndim == 2 else torch.nn.functional.conv3d
        ref = f(tx, tw, stride=case.get("stride", 1))
        if case.get("bias_relu"):
            bias = torch.from_numpy(np.linspace(-1, 1, case["w"][0]).astype("float32"))
            ref = torch.relu(ref + bias.reshape(1, -1, *([1] * ndim)))
        if layout == "NHWC":
            ref = ref.permute(0, 2, 3, 1)
        tol = 2e-2 if case["dtype"] == "float16" else 1e-4
        np.testing.assert_allclose(got.astype("float32"), ref.numpy(), rtol=tol, atol=tol)
        print("numerics ok")
"""

CASES = {
    "seed_fp16": {"x": [1, 768, 64, 64], "w": [256, 768, 1, 1], "dtype": "float16"},
    "fp32": {"x": [1, 128, 32, 32], "w": [64, 128, 1, 1], "dtype": "float32"},
    "batch2": {"x": [2, 128, 32, 32], "w": [64, 128, 1, 1], "dtype": "float16"},
    "stride2": {"x": [1, 128, 32, 32], "w": [64, 128, 1, 1], "dtype": "float16", "stride": 2},
    "bias_relu": {"x": [1, 128, 32, 32], "w": [64, 128, 1, 1], "dtype": "float16",
                  "bias_relu": True},
    "nhwc": {"x": [1, 32, 32, 128], "w": [64, 1, 1, 128], "dtype": "float16",
             "layout": "NHWC", "kernel": "OHWI"},
    "conv3d_1x1": {"x": [1, 64, 8, 16, 16], "w": [32, 64, 1, 1, 1], "dtype": "float16"},
}  # fmt: skip


def _run(case: dict[str, object], what: str, timeout: int = 600) -> str:
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(case), what],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out = r.stdout + r.stderr
    if r.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-8:])
        pytest.fail(f"{what} failed (exit {r.returncode}):\n{tail}")
    return r.stdout


@pytest.mark.parametrize("name", list(CASES))
def test_normalize_to_matmul_sequence(name: str) -> None:
    """Maps from the original block, then reindex, then transform_layout: the 1x1 conv becomes
    C[S, I, J] += A[S, I, K] * B[S, J, K] (4 block iterators, 3-D operands)."""
    out = _run(CASES[name], "sequence")
    assert json.loads(out.strip().splitlines()[-1]) == [4, 3, 3]


@pytest.mark.parametrize("name", list(CASES))
def test_dlight_pipeline_compiles_to_cuda(name: str) -> None:
    out = _run(CASES[name], "cuda")
    assert int(out.split("kernels:")[1].split()[0]) >= 1, out


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_numerics_against_pytorch_on_gpu(name: str) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", "import tvm; print(tvm.cuda(0).exist)"],
        capture_output=True,
        text=True,
    )
    if probe.stdout.strip() != "True":
        pytest.skip("no CUDA device here: the numerics need a GPU")
    assert "numerics ok" in _run(CASES[name], "run")
