"""Patch: sort, argsort and topk of bfloat16 tensors on CPU are right.

The CPU kernels Relax lowers them to (tvm.contrib.sort) have no bfloat16 and read its bits as
another type: a bfloat16 sort gave values that are not in the input (5.5e13 among small
numbers), with no error, so a bfloat16 MoE router's top-k picked the wrong experts. On the
fork they are sorted as float32 (exact both ways), through torch.export as a user gets them.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_outputs


class Router(torch.nn.Module):
    """A mixture-of-experts router's choice: the top 2 experts' weights and ids, and the
    experts ranked by weight."""

    def forward(self, scores: torch.Tensor) -> tuple[torch.Tensor, ...]:
        weights, experts = torch.topk(scores, 2, dim=-1)
        ranked, _ = torch.sort(scores, dim=-1, descending=True)
        return weights, experts, ranked


def test_a_bfloat16_router_picks_pytorchs_experts() -> None:
    import ml_dtypes  # NumPy's bfloat16, as TVM takes and gives it

    # distinct values (no ties), each one a bfloat16 exactly
    values = torch.randperm(64, generator=torch.Generator().manual_seed(0)).float() / 8 - 4
    scores = values.reshape(4, 16).to(torch.bfloat16)
    with torch.no_grad():
        want = [t.float().numpy() for t in Router()(scores)]
        mod = from_exported_program(torch.export.export(Router(), (scores,)))
    got = run_outputs(mod, scores.float().numpy().astype(ml_dtypes.bfloat16))
    assert [str(g.dtype) for g in got] == ["bfloat16", "int64", "bfloat16"]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.astype(np.float32), w)
