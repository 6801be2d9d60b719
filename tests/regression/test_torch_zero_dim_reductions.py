"""Patch: an op that takes a dimension, on a 0-d tensor, imports as PyTorch runs it.

PyTorch lets `sum`, `mean`, `amax`, `max(dim)`, `argmax`, `var`, `softmax`, `cumsum`, `sort`,
`topk` and the other dim-taking ops name dimension 0 (or -1) of a 0-d tensor, its one
element, and returns 0-d results: `loss.sum(0)`, a scalar's `softmax(-1)`, `argmax()` of a
scalar (PyTorch's own op tests' first samples are 0-d). Relax's operators refuse an axis of a
0-d tensor ("the input axis 0 is out of range. The input tensor has 0 dimensions") and TOPI's
argmax any 0-d input ("Cannot reduce a 0 dim Tensor"), so stock stops at import or build. On
the fork each imports on the tensor as a 1-d tensor of one element and matches PyTorch, values,
dtypes and 0-d shapes; a tensor that is not 0-d imports as before.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

CASES = {
    "sum_dim_0": lambda x: x.sum(0),
    "sum_keepdim": lambda x: x.sum(-1, keepdim=True),
    "mean_dims_list": lambda x: x.mean([0]),
    "amax": lambda x: x.amax(0),
    "max_dim": lambda x: x.max(0),
    "argmax_dim": lambda x: x.argmax(0),
    "argmax_all": lambda x: x.argmax(),
    "argmin_last": lambda x: x.argmin(-1),
    "logsumexp": lambda x: torch.logsumexp(x, 0),
    "var": lambda x: x.var(0, correction=0),
    "softmax": lambda x: torch.softmax(x, -1),
    "log_softmax": lambda x: torch.log_softmax(x, 0),
    "cumsum": lambda x: x.cumsum(0),
    "sort": lambda x: torch.sort(x, 0),
    "topk": lambda x: torch.topk(x, 1, 0),
    "any": lambda x: (x > 0).any(0),
    "vector_norm": lambda x: torch.linalg.vector_norm(x, dim=0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_dim_of_a_0d_tensor_is_its_one_element(name: str) -> None:
    got, want = eager_and_tvm(Lambda(CASES[name]), torch.tensor(-1.5))
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_a_tensor_with_dimensions_imports_as_before() -> None:
    x = torch.arange(12.0).reshape(3, 4) - 5
    got, want = eager_and_tvm(Lambda(lambda t: (t.sum(1), torch.softmax(t, 0))), x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
