"""Patch: import topk(..., sorted=False).

PyTorch's `topk(x, k, sorted=False)` leaves the order of the k elements to the implementation;
the importer refused it ("Currently supports only sorted output for topk operator"). The
routers of DeepSeek-V3-style mixtures of experts ask for it (GLM-4-MoE, DeepSeek-V2/V3,
dots1, MiniMax, ...: `torch.topk(scores, k=self.top_k, dim=-1, sorted=False)`), so those
decoder LMs stopped at import. On the fork the sorted order, one PyTorch allows, is taken:
the k values and indices are PyTorch's, and a GLM-4-MoE decoder's logits match PyTorch's.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .hf import on_ids, transformers
from .relaxrun import run_llvm


class Route(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, indices = torch.topk(x, 3, dim=-1, sorted=False)
        # the same k values and indices, whatever their order
        return torch.sort(values).values + 100 * torch.sort(indices).values


def test_the_k_largest_in_any_order() -> None:
    x = torch.randn(6, 20)
    with torch.no_grad():
        want = Route()(x).numpy()
        mod = from_exported_program(torch.export.export(Route(), (x,)))
    np.testing.assert_array_equal(run_llvm(mod, x.numpy()), want)


def test_a_glm4_moe_decoder_routes_as_pytorch() -> None:
    """Two layers of GLM-4-MoE (DeepSeek-V3's group-limited routing: 8 experts in 2 groups,
    2 experts a token), random weights, on 12 tokens, against PyTorch."""
    hf = transformers()
    cfg = hf.AutoConfig.for_model(
        "glm4_moe", vocab_size=256, hidden_size=64, intermediate_size=64,
        moe_intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, n_routed_experts=8, num_experts_per_tok=2,
        n_group=2, topk_group=1, first_k_dense_replace=0, max_position_embeddings=128,
    )  # fmt: skip
    model = on_ids(hf.AutoModelForCausalLM.from_config(cfg), "logits")
    ids = torch.randint(0, 256, (1, 12))
    with torch.no_grad():
        want = model(ids).numpy()
        mod = from_exported_program(torch.export.export(model, (ids,)), keep_params_as_input=False)
    got = run_llvm(mod, ids.numpy())
    assert float(np.abs(got - want).max()) <= 1e-3 * float(np.abs(want).max())
