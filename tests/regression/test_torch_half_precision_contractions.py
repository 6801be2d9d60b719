"""Patch: linear layers, matmuls and convolutions of float16 and bfloat16 tensors keep their
dtype, as in PyTorch.

The importer gave every matmul, linear layer and convolution a float32 result, whatever its
inputs: a model loaded in half precision (`from_pretrained(..., torch_dtype="auto")` gives
bfloat16 or float16 for most checkpoints) stopped at import at its first bias add ("Binary
operators must have the same datatype ... R.add(p_..._query_bias, lv28) uses datatype
T.bfloat16 on the LHS"). On the fork those contractions give the inputs' dtype, as PyTorch's
do (accumulating in float32): a float16 BERT runs in float16 and matches PyTorch at float16's
precision, and a bfloat16 MLP in bfloat16.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm.relax.frontend.torch import from_exported_program

from .hf import on_ids, transformers
from .relaxrun import run_llvm


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(32, 64)
        self.down = torch.nn.Linear(64, 32)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x))) @ y


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    got, want = got.astype(np.float32), want.astype(np.float32)
    return float(np.abs(got - want).max() / np.abs(want).max())


def test_a_float16_bert_runs_in_float16() -> None:
    hf = transformers()
    cfg = hf.AutoConfig.for_model(
        "bert", vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=128,
    )  # fmt: skip
    model = on_ids(hf.AutoModel.from_config(cfg).to(torch.float16), "last_hidden_state")
    ids = torch.randint(0, 256, (1, 16))
    with torch.no_grad():
        want = model(ids).numpy()
        mod = from_exported_program(torch.export.export(model, (ids,)), keep_params_as_input=False)
    got = run_llvm(mod, ids.numpy())
    assert got.dtype == want.dtype == np.float16
    assert _relative_error(got, want) <= 5e-3


def test_a_bfloat16_mlp_runs_in_bfloat16() -> None:
    model = Mlp().to(torch.bfloat16).eval()
    x, y = torch.randn(8, 32, dtype=torch.bfloat16), torch.randn(32, 16, dtype=torch.bfloat16)
    with torch.no_grad():
        want = model(x, y).float().numpy()
        mod = from_exported_program(torch.export.export(model, (x, y)))
    import ml_dtypes  # NumPy's bfloat16, as TVM returns it

    args = [t.float().numpy().astype(ml_dtypes.bfloat16) for t in (x, y)]
    got = run_llvm(mod, *args)
    assert str(got.dtype) == "bfloat16"
    assert _relative_error(got, want) <= 2e-2


class Dot(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x @ y


def test_float16_products_accumulate_in_float32_as_pytorch() -> None:
    # 4096 products of 0.1: in float16 a running sum stops growing near 256 (its spacing
    # there is 0.25); PyTorch accumulates in float32 and rounds the sum once (409.5)
    x, y = torch.ones(1, 4096, dtype=torch.float16), torch.full((4096, 1), 0.1, dtype=torch.float16)
    with torch.no_grad():
        want = Dot()(x, y).numpy()
        mod = from_exported_program(torch.export.export(Dot(), (x, y)))
    got = run_llvm(mod, x.numpy(), y.numpy())
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_integer_matmuls_stay_integers() -> None:
    # torch.bmm of int64 tensors is int64 (exact); the importer gave it a float32 result
    x = torch.randint(-1000, 1000, (2, 3, 5))
    y = torch.randint(-1000, 1000, (2, 5, 4))

    class Bmm(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.bmm(a, b) + torch.baddbmm(a @ b, a, b)

    with torch.no_grad():
        want = Bmm()(x, y).numpy()
        mod = from_exported_program(torch.export.export(Bmm(), (x, y)))
    got = run_llvm(mod, x.numpy(), y.numpy())
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


class ConvWithBias(torch.nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, w, b)


class AddMM(torch.nn.Module):
    """GPT-2's Conv1D: bias + x @ w."""

    def forward(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.addmm(b, x, w)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_a_bias_is_added_before_the_result_is_rounded(dtype: torch.dtype) -> None:
    # 500.25 + 500 + 0.05 - 1000: PyTorch adds the bias to the float32 sum and rounds once
    # (0.3 in float16, 0.05 in bfloat16); rounding 1000.3 first gave 0.5 and 0
    from .relaxrun import eager_and_tvm

    x = torch.tensor([500.25, 500.0, 0.05], dtype=dtype)
    b = torch.tensor([-1000.0], dtype=dtype)
    w = torch.ones(1, 3, 1, 1, dtype=dtype)
    for model, args in (
        (ConvWithBias(), (x.reshape(1, 3, 1, 1), w, b)),
        (AddMM(), (x.reshape(1, 3), w.reshape(3, 1), b)),
    ):
        got, want = eager_and_tvm(model, *args)
        np.testing.assert_array_equal(got[0].astype(np.float32), want[0].astype(np.float32))
