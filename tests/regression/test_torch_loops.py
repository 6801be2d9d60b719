"""Patch: torch.export while_loop and scan import into Relax (BUGS.md section 4).

On stock 0.26.0 from_exported_program rejects them ("Unsupported function types
['while_loop']"); on the fork they become recursive private Relax functions that build for
llvm and match PyTorch, on several inputs, including loops whose trip count depends on data.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from torch._higher_order_ops.cond import cond
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program


def compile_torch(model: torch.nn.Module, example: tuple[torch.Tensor, ...]):
    mod = from_exported_program(torch.export.export(model, example))
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    return vm["main"]


def check(model: torch.nn.Module, inputs: list[tuple[torch.Tensor, ...]]) -> None:
    """Compile once (from the first input) and compare with PyTorch on every input."""
    model = model.eval()
    main = compile_torch(model, inputs[0])
    for args in inputs:
        got = main(*[tvm.runtime.tensor(a.numpy()) for a in args])
        with torch.no_grad():
            expected = model(*args)
        expected = expected if isinstance(expected, tuple | list) else (expected,)
        got = [got] if isinstance(got, tvm.runtime.Tensor) else list(got)
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-5)


class Counter(torch.nn.Module):
    def forward(self, x):
        return while_loop(
            lambda i, acc: i < 5, lambda i, acc: (i + 1, acc * 2.0 + 1.0), (torch.tensor(0), x)
        )


class UntilSmall(torch.nn.Module):
    """Halve x until its norm drops below a threshold: the trip count depends on x."""

    def forward(self, x):
        def cond_fn(steps, y):
            return torch.linalg.vector_norm(y) > 0.5

        def body_fn(steps, y):
            return steps + 1, y * 0.5

        return while_loop(cond_fn, body_fn, (torch.tensor(0), x))


class SeveralShapes(torch.nn.Module):
    """Carries a counter, a vector and a matrix; the bound is an extra (closed-over) input."""

    def forward(self, v, m, limit):
        def cond_fn(i, v, m):
            return i < limit.sum()

        def body_fn(i, v, m):
            return i + 1, v + m.sum(dim=0), m * 0.9 + v.unsqueeze(0)

        return while_loop(cond_fn, body_fn, (torch.tensor(0), v, m))


class CumSum(torch.nn.Module):
    def forward(self, xs):
        def combine(carry, x):
            new = carry + x
            return new, new.clone()

        return scan(combine, torch.zeros_like(xs[0]), xs)


class RNNCell(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.w_ih = torch.nn.Parameter(torch.randn(4, 3) * 0.5)
        self.w_hh = torch.nn.Parameter(torch.randn(4, 4) * 0.5)

    def forward(self, xs, h0):
        def combine(h, x):
            h_next = torch.tanh(x @ self.w_ih.t() + h @ self.w_hh.t())
            return h_next, h_next * 2.0

        return scan(combine, h0, xs)


class NestedWhile(torch.nn.Module):
    def forward(self, x):
        def inner(j, y):
            return while_loop(lambda k, z: k < 3, lambda k, z: (k + 1, z + 1.0), (j, y))

        def body(i, y):
            _, y2 = inner(torch.zeros_like(i), y)
            return i + 1, y2 * 0.5

        return while_loop(lambda i, y: i < 2, body, (torch.tensor(0), x))


class LoopInCond(torch.nn.Module):
    def forward(self, x):
        def looping(x, i0):
            return while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * 1.5), (i0, x))[1]

        def shifting(x, i0):
            return x - 1.0

        # The counter starts outside: torch.export cannot create a tensor inside a branch.
        return cond(x.sum() > 0, looping, shifting, (x, torch.zeros((), dtype=torch.int64)))


def test_counter_loop() -> None:
    check(Counter(), [(torch.randn(3),), (torch.randn(3) * 10,)])


def test_data_dependent_trip_count() -> None:
    # fixed values, not random ones: a random draw can fall under the threshold
    # and take the same (zero) trips as the first input
    start = torch.tensor([1.0, -2.0, 0.5, 1.5])
    inputs = [(torch.full((4,), 0.1),), (start,), (start * 100,)]
    with torch.no_grad():
        trips = {int(UntilSmall()(*x)[0]) for x in inputs}
    assert len(trips) == 3, trips  # the inputs really take different trip counts
    check(UntilSmall(), inputs)


def test_several_carried_shapes_and_closure() -> None:
    check(
        SeveralShapes(),
        [
            (torch.randn(3), torch.randn(2, 3), torch.tensor([2, 1])),
            (torch.randn(3), torch.randn(2, 3), torch.tensor([0, 1])),
        ],
    )


def test_scan_cumulative_sum() -> None:
    check(CumSum(), [(torch.randn(5, 3),), (torch.arange(15.0).reshape(5, 3),)])


def test_scan_rnn_cell() -> None:
    check(
        RNNCell(),
        [(torch.randn(6, 2, 3), torch.zeros(2, 4)), (torch.randn(6, 2, 3), torch.randn(2, 4))],
    )


def test_nested_loops() -> None:
    check(NestedWhile(), [(torch.randn(3),), (torch.ones(3),)])


def test_loop_inside_cond() -> None:
    check(LoopInCond(), [(torch.ones(3),), (-torch.ones(3),)])


@pytest.mark.parametrize("reverse", [True])
def test_scan_reverse(reverse: bool) -> None:
    class Rev(torch.nn.Module):
        def forward(self, xs):
            return scan(
                lambda c, x: (c * 0.5 + x, c.clone()), torch.zeros_like(xs[0]), xs, reverse=reverse
            )

    check(Rev(), [(torch.randn(4, 2),), (torch.randn(4, 2),)])


def test_map() -> None:
    from torch._higher_order_ops.map import map as torch_map

    class Map(torch.nn.Module):
        def forward(self, xs, y):
            return torch_map(lambda x, y: x * y + 1.0, xs, y)

    check(Map(), [(torch.randn(4, 3), torch.randn(3)), (torch.randn(4, 3), torch.ones(3))])
