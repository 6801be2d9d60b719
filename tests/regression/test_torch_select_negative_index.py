"""Patch: selecting with a negative index counts from the end.

`x[:, -1]` (the last token's hidden state, the last step of a sequence) exports as
`aten.select.int(x, 1, -1)`, which the importer gave to `take` without wrapping the index: the
kernel read before the tensor's start and returned whatever lay there, with no error. On the
fork it matches PyTorch, at a fixed and at a dynamic sequence length.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class LastToken(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = torch.nn.Linear(8, 4)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.head(hidden[:, -1]) + hidden[-1, -2, :4]


def _check(hidden: torch.Tensor, dynamic: bool) -> None:
    model = LastToken().eval()
    shapes = ({1: torch.export.Dim("seq", min=2, max=64)},) if dynamic else None
    with torch.no_grad():
        want = model(hidden).numpy()
        exported = torch.export.export(model, (hidden,), dynamic_shapes=shapes)
    got = run_llvm(from_exported_program(exported), hidden.numpy())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_last_token_at_a_fixed_length() -> None:
    torch.manual_seed(0)
    _check(torch.randn(2, 5, 8), dynamic=False)


def test_the_last_token_at_a_dynamic_length() -> None:
    torch.manual_seed(0)
    _check(torch.randn(2, 7, 8), dynamic=True)
