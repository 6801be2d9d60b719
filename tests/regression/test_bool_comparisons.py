"""Patch: comparisons of boolean tensors compile (BUGS: 10 of 13 decoder LMs stopped in
`tvm.compile`).

Causal masks compare boolean tensors (`aten.eq.Tensor` on bool: transformers' mask functions
and `padding_mask == causal_mask`). Stock 0.26.0 legalizes `==` and `!=` of two bool tensors
to a TIR comparison that its LLVM codegen lowers to `fcmp oeq i1`, which LLVM's verifier
rejects ("Invalid operand types for FCmp instruction"), and `<`/`>=` stop at a check that the
operands are floats. On the fork they compare as uint8 (False < True, as in NumPy) and match
PyTorch, on the torch.export route and on a Relax module written by hand (the ONNX route).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program
from tvm.script import relax as R

COMPARISONS = {
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
}


class MaskCompare(torch.nn.Module):
    """Two boolean masks made from the inputs, compared elementwise (broadcast over rows)."""

    def __init__(self, op: str) -> None:
        super().__init__()
        self.op = COMPARISONS[op]

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.op(a > 0, b > 0)


class CausalMask(torch.nn.Module):
    """The shape of transformers' mask: a causal mask and a padding mask, combined by `==`."""

    def forward(self, scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        n = scores.shape[-1]
        pos = torch.arange(n)
        causal = pos[None, :] <= pos[:, None]
        padding = keep[:, None, :] > 0
        allowed = (causal[None] == padding) & causal[None]
        return scores.masked_fill(~allowed, float("-inf")).softmax(-1).nan_to_num()


def _run(mod: tvm.IRModule, *args: np.ndarray) -> np.ndarray:
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in args])
    return (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy()


@pytest.mark.parametrize("op", sorted(COMPARISONS))
def test_torch_bool_comparison_matches(op: str) -> None:
    torch.manual_seed(0)
    a, b = torch.randn(6, 7), torch.randn(1, 7)
    model = MaskCompare(op).eval()
    mod = from_exported_program(torch.export.export(model, (a, b)))
    got = _run(mod, a.numpy(), b.numpy())
    want = model(a, b).numpy()
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)


def test_causal_mask_matches() -> None:
    torch.manual_seed(0)
    scores, keep = torch.randn(2, 5, 5), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    model = CausalMask().eval()
    mod = from_exported_program(torch.export.export(model, (scores, keep)))
    got = _run(mod, scores.numpy(), keep.numpy())
    np.testing.assert_allclose(got, model(scores, keep).numpy(), rtol=1e-5, atol=1e-6)


def test_relax_bool_equal_and_scalar_compare() -> None:
    """What the ONNX importer emits for Equal on bool inputs, and a bool tensor against a
    bool constant."""

    @tvm.script.ir_module
    class Mod:
        @R.function
        def main(a: R.Tensor((4, 3), "bool"), b: R.Tensor((4, 3), "bool")) -> R.Tuple(
            R.Tensor((4, 3), "bool"), R.Tensor((4, 3), "bool")
        ):
            eq = R.equal(a, b)
            gt = R.greater(a, R.const(False, "bool"))
            return (eq, gt)

    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, (4, 3)).astype(bool), rng.integers(0, 2, (4, 3)).astype(bool)
    vm = relax.VirtualMachine(tvm.compile(Mod, target="llvm"), tvm.cpu())
    eq, gt = vm["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b))
    np.testing.assert_array_equal(eq.numpy(), a == b)
    np.testing.assert_array_equal(gt.numpy(), a > False)
