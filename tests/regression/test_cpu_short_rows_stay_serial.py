"""Patch: an elementwise kernel's short rows stay serial loops, not fused into the parallel one.

dlight's CPU Injective rule (a fork patch) fused every loop of a large elementwise block into
one parallel loop when its innermost one was a short scalar row, so each element's indices
were computed by 64-bit division and modulo. A depthwise conv on a 5 x 5 map pads its input to
7 x 7 rows: mobilenet_v2's 960-channel one (1 x 960 x 5 x 5, 3 x 3, 216 K multiply-adds) took
0.16-0.23 ms, nine tenths of it in that padding, against 0.02 ms for the conv alone (1 thread,
2-core AMD EPYC). The rows of a plane now stay serial under a parallel loop over the planes:
0.021-0.027 ms, a quarter of PyTorch's time. Stock schedules nothing (no parallel loop); the
fork before this patch made one parallel loop over all 47040 padded elements.
"""

from __future__ import annotations

import numpy as np
import torch
import tvm
from tvm import relax, tirx

from .relaxrun import import_torch, run_llvm


def _pad_loops(mod: tvm.IRModule) -> list[tuple[bool, int]]:
    """The loops (parallel or not, extent) around the padding block of the conv kernel of
    `mod`, outermost first."""
    with tvm.target.Target("llvm"):
        lowered = relax.get_pipeline("default")(mod)
    convs = [
        func
        for gvar, func in lowered.functions_items()
        if isinstance(func, tirx.PrimFunc) and gvar.name_hint.startswith("conv2d")
    ]
    assert convs, "no conv kernel in the lowered module"
    loops: list[tuple[bool, int]] = []

    def visit(node: object) -> None:
        if isinstance(node, tirx.For):
            body = str(node.body.script())
            if "pad_temp" in body and "group_conv2d" not in body:
                loops.append((node.kind == tirx.ForKind.PARALLEL, int(node.extent)))

    tirx.stmt_functor.post_order_visit(convs[0].body, visit)
    return loops[::-1]


def test_a_depthwise_conv_on_a_small_map_pads_plane_by_plane() -> None:
    model = torch.nn.Conv2d(960, 960, 3, padding=1, groups=960, bias=False).eval()
    x = torch.randn(1, 960, 5, 5)
    with torch.no_grad():
        want = model(x).numpy()
    mod = import_torch(model, x)
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), want, rtol=1e-5, atol=1e-5)
    loops = _pad_loops(mod)
    assert loops == [(True, 960), (False, 7), (False, 7)], f"the pad's loops: {loops}"
