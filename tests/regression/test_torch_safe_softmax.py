"""Patch: the Torch importer computes `aten._safe_softmax` in one kernel (performance issue:
Whisper's encoder, DINOv2 and ViT behind PyTorch eager).

`torch.export`'s decompositions turn `scaled_dot_product_attention` into its math path,
whose softmax is `aten._safe_softmax`: a softmax that gives 0, not NaN, along a row of
scores that are all -inf (a query every key is masked from). Decomposed too, it became a
softmax plus a comparison, two logical nots, an `any`, a tensor of zeros and a `where`, five
more passes over the scores: 41 ms of Whisper-tiny's 465 ms encoder at 1500 frames. On the
fork the importer keeps the op and emits one kernel, a softmax whose last stage selects the
0, and the results still match PyTorch, fully masked rows and NaNs included.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class Attention(torch.nn.Module):
    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@functools.cache
def _args() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 4, 24, 16) for _ in range(3))
    mask = torch.zeros(1, 1, 24, 24)
    mask[..., 20:] = float("-inf")  # the last 4 keys are padding
    mask[..., 5, :] = float("-inf")  # query 5 sees no key
    mask[..., 9, 3:] = float("-inf")
    return q, k, v, mask


@functools.cache
def _imported() -> tvm.IRModule:
    with torch.no_grad():
        exported = torch.export.export(Attention().eval(), _args())
    return from_exported_program(exported, keep_params_as_input=False)


def _ops(func: relax.Function) -> list[str]:
    ops: list[str] = []
    relax.analysis.post_order_visit(
        func, lambda e: ops.append(e.op.name) if isinstance(e, relax.Call) else None
    )
    return ops


def test_safe_softmax_is_one_kernel() -> None:
    mod = _imported()
    ops = _ops(mod["main"])
    decomposed = sorted({op for op in ops if op in ("relax.where", "relax.equal", "relax.max")})
    assert not decomposed, f"the safe softmax decomposed into {decomposed}: {ops}"
    kernels = [gv.name_hint for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)]
    assert kernels == ["safe_softmax"], kernels


def test_attention_matches_pytorch_with_a_fully_masked_query() -> None:
    got = run_llvm(_imported(), *(a.numpy() for a in _args()))
    with torch.no_grad():
        expected = Attention()(*_args()).numpy()
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got[0, :, 5], 0.0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


class SafeSoftmax(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._safe_softmax(x, 1)


def test_safe_softmax_matches_pytorch_on_infinities_and_nans() -> None:
    x = torch.randn(3, 7, 2)
    x[0, :, 1] = float("-inf")  # a row of -inf: 0
    x[1, 2, 0] = float("nan")  # NaN stays NaN
    x[2, 4, 1] = float("-inf")  # one -inf: its weight 0
    x[2, :3, 0] = float("-inf")
    mod = from_exported_program(torch.export.export(SafeSoftmax(), (x,)))
    expected = SafeSoftmax()(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=1e-6, atol=1e-7)
