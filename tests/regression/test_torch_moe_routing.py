"""Patch: MoE routing imports (BUGS: Mixtral stopped at import with "Unsupported function types
['grouped_mm_fallback.default', 'histc.default']").

transformers' mixture-of-experts layers (Mixtral, Qwen2-MoE, ...) count the tokens routed to
each expert with `torch.histc` and multiply each expert's tokens by its weights with a grouped
matmul (`aten._grouped_mm`, or on fp32 CPU transformers' own `grouped_mm_fallback` op of the
same meaning). Stock 0.26.0 has no converter for either; the fork imports both, and a Mixtral
model through torch.export matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from . import hf
from .relaxrun import run_llvm


class Histogram(torch.nn.Module):
    """Expert counts as transformers computes them, and a range the values fall outside of."""

    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        counts = torch.histc(ids, bins=4, min=0, max=3)
        spread = torch.histc(x, bins=5, min=-1.0, max=1.5)
        return torch.cat([counts, spread])


def test_histc_matches() -> None:
    ids = torch.tensor([3.0, 0.0, 1.0, 1.0, 2.0, 3.0, 3.0, 5.0])
    x = torch.tensor([-2.0, -1.0, -0.5, 0.0, 0.49, 0.5, 1.0, 1.5, 1.6])
    with torch.no_grad():
        mod = from_exported_program(torch.export.export(Histogram(), (ids, x)))
    got = run_llvm(mod, ids.numpy(), x.numpy())
    np.testing.assert_array_equal(got, Histogram()(ids, x).numpy())


class OneExpert(torch.nn.Module):
    """Counts with min == max (HunYuan-MoE with one expert: `max=num_experts - 1` is 0), where
    torch takes the data's range, widened by 1 on each side when the data are all equal."""

    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.histc(ids, bins=1, min=0, max=0), torch.histc(x, bins=4)])


def test_histc_of_the_data_range_matches() -> None:
    ids = torch.zeros(6)
    x = torch.tensor([-2.0, -1.0, -0.5, 0.0, 0.49, 0.5, 1.0, 1.5, 1.6])
    with torch.no_grad():
        mod = from_exported_program(torch.export.export(OneExpert(), (ids, x)))
    got = run_llvm(mod, ids.numpy(), x.numpy())
    np.testing.assert_array_equal(got, OneExpert()(ids, x).numpy())


def test_mixtral_matches() -> None:
    transformers = hf.transformers()
    torch.manual_seed(0)
    config = transformers.MixtralConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    model = transformers.MixtralForCausalLM(config).eval()
    ids = torch.randint(0, 128, (1, 12))

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            logits: torch.Tensor = self.model(input_ids=input_ids).logits
            return logits

    with torch.no_grad():
        want = Logits()(ids).numpy()
        mod = from_exported_program(torch.export.export(Logits(), (ids,)))
    got = run_llvm(mod, ids.numpy())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
