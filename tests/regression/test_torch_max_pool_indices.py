"""Patch: a max pool's indices are refused at import, not given as zeros.

`F.max_pool2d(x, 3, return_indices=True)` exports as `max_pool2d_with_indices`, whose indices
the importer gave as a tensor of zeros (of the values' dtype): a model that uses them got wrong
numbers with no error. On the fork the import stops with an error naming the op where the
indices are used; a model that takes only the values imports and matches PyTorch as before.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class Indices(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, indices = torch.nn.functional.max_pool2d(x, 3, stride=2, return_indices=True)
        return values + indices.to(x.dtype)


class ValuesOnly(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.max_pool2d(x, 3, stride=2, return_indices=True)[0]


def test_used_indices_stop_the_import() -> None:
    exported = torch.export.export(Indices(), (torch.randn(1, 2, 7, 7),))
    with pytest.raises(NotImplementedError, match="indices of a max pool"):
        from_exported_program(exported)


def test_the_values_alone_still_import() -> None:
    x = torch.randn(1, 2, 7, 7)
    with torch.no_grad():
        want = ValuesOnly()(x).numpy()
        mod = from_exported_program(torch.export.export(ValuesOnly(), (x,)))
    np.testing.assert_array_equal(run_llvm(mod, x.numpy()), want)
