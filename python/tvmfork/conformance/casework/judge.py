"""A run of a compiled case and its verdict, kept apart: what the module is called with and
what its outputs are held to (`Check`, or `Generation` for greedy decoding), and the verdict
on the outputs it gave (`verdict`, `generation_verdict`).

A case run here judges its outputs as they come (`backends.checked`). A bundled case
(`bundle`) writes its checks down beside its library, and the runner on the device
(`bundle_runner.py`) gives the outputs it got there to these same functions: one judgement,
wherever the module ran. numpy (and ml_dtypes for bfloat16) inside the functions; standard
library at import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .compare import as_accurate, compare, nonfinite

# (rtol, atol) per dtype of the case: PyTorch's own assert_close tolerances for float32 and
# float64 widened to an order of a fused or reordered computation; the half precisions at
# their precision (a few units in the last place, and an absolute floor for cancellation).
# Integers and bools are compared exactly whatever these say.
TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-5),
    "bfloat16": (1.6e-2, 1e-2),
    "float16": (2e-3, 1e-3),
    "int64": (0.0, 0.0),
    "bool": (0.0, 0.0),
}
# `Check.fallback`: what a half-precision output that fails the plain comparison is held to
AS_ACCURATE = "as_accurate"  # a model's: as close to its float32 computation as PyTorch's
NO_LESS_ACCURATE = "no_less_accurate"  # an op's: no farther from float64 than eager's


@dataclass
class Check:
    """One call of the module and what its outputs are held to.

    `args`: the inputs (numpy), in the module's parameter order. `want`: the reference
    outputs. Compared within `rtol`/`atol`, or `rel_max` (`compare.compare`); with
    `per_dtype`, each output at its own dtype's tolerance (`by_output_dtype`). `ties`:
    (input, dimension) along which an index output may point at another of equal values
    (`tied_at`). `fallback`: where the plain comparison fails on half precision, what
    the outputs are then held to, against `exact` (and `nearby`: PyTorch's results and the
    exact ones on inputs a rounding step away, `compare.as_accurate`) for a model of
    `model_dtype`. `label` prefixes the problem ("size 16: "). `fill` computes `exact` and
    `nearby` when first needed (a model's extra forward passes); it is not written down.
    """

    args: list[Any]
    want: list[Any]
    rtol: float = 0.0
    atol: float = 0.0
    rel_max: float = 0.0
    per_dtype: bool = False
    ties: tuple[Any, int] | None = None
    fallback: str = ""
    model_dtype: str = ""
    exact: list[Any] | None = None
    nearby: list[tuple[list[Any], list[Any]]] = field(default_factory=list)
    label: str = ""
    fill: Callable[[Check], None] | None = None

    def filled(self) -> Check:
        """The check with `exact` and `nearby` computed (once)."""
        if self.fill is not None:
            fill, self.fill = self.fill, None
            fill(self)
        return self


def verdict(got: list[Any], check: Check) -> tuple[str, dict[str, Any]]:
    """('' when `got` holds, else the problem; notes: the relative error where `rel_max` is
    set, and what a half-precision fallback measured)."""
    info: dict[str, Any] = {}
    want = check.want
    if check.ties is not None:
        got = tied_at(got, want, *check.ties)
    if check.per_dtype:
        problem = by_output_dtype(got, want)
    else:
        problem, rel = compare(got, want, check.rtol, check.atol, check.rel_max)
        if check.rel_max:
            info["rel_err"] = rel
    if problem and check.fallback:
        check.filled()
        if check.fallback == AS_ACCURATE and check.exact is not None:
            problem, errors = as_accurate(got, want, check.exact, check.model_dtype, check.nearby)
            info.update(errors)
        elif check.fallback == NO_LESS_ACCURATE and check.exact is not None:
            problem = no_less_accurate(got, want, check.exact)
            info["half_vs_float64"] = "ok" if not problem else "worse"
    return (f"{check.label}{problem}" if problem else ""), info


def no_less_accurate(got: list[Any], want: list[Any], exact: list[Any]) -> str:
    """ "" where each half-precision output of `got` is, element by element, within its
    dtype's TOLERANCES of eager's `want` or no farther from the float64 result `exact` than
    eager's is (PyTorch's float16 instance norm is 12 steps off where the fork's is exact);
    else the problem. Counts, shapes and dtypes must match and other outputs as before."""
    import numpy as np

    if len(got) != len(want) or len(exact) != len(want):
        return by_output_dtype(got, want)
    for i, (g, w, e) in enumerate(zip(got, want, exact, strict=True)):
        g, w, e = np.asarray(g), np.asarray(w), np.asarray(e)
        if str(w.dtype) not in ("float16", "bfloat16") or e.shape != w.shape:
            problem = by_output_dtype([g], [w])
        elif g.shape != w.shape or str(g.dtype) != str(w.dtype):
            problem = by_output_dtype([g], [w])
        else:
            rtol, atol = TOLERANCES[str(w.dtype)]
            gf, wf, ef = (a.astype(np.float64) for a in (g, w, e))
            problem = nonfinite(gf, wf)
            close = np.abs(gf - wf) <= atol + rtol * np.abs(wf)
            closer = np.abs(gf - ef) <= np.abs(wf - ef)
            bad = np.isfinite(wf) & ~(close | closer)
            if not problem and bad.any():
                j = int(np.flatnonzero(bad)[0])
                problem = (
                    f"output 0: {int(bad.sum())} element(s) beyond tolerance and farther from "
                    f"the float64 result than eager's: {gf.flat[j]:g}, eager {wf.flat[j]:g}, "
                    f"float64 {ef.flat[j]:g}"
                )
        if problem:
            return problem.replace("output 0:", f"output {i}:", 1)
    return ""


def by_output_dtype(got: list[Any], want: list[Any]) -> str:
    """`compare` with each output at its own dtype's TOLERANCES (a bool sample's softmax is
    float64, compared as float64), float32's for a dtype not listed; "" when all match."""
    if len(got) != len(want):
        return compare(got, want, 0, 0, 0)[0]
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        rtol, atol = TOLERANCES.get(str(getattr(w, "dtype", "")), TOLERANCES["float32"])
        problem, _ = compare([g], [w], rtol, atol, 0)
        if problem:
            return problem.replace("output 0:", f"output {i}:", 1)
    return ""


def tied_at(got: list[Any], want: list[Any], x: Any, dim: int) -> list[Any]:
    """`got` with each int64 output that points along `dim` of `x` at the values eager's
    points at replaced by eager's."""
    import numpy as np

    fixed = list(got)
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        g, w = np.asarray(g), np.asarray(w)
        if w.dtype != np.int64 or g.shape != w.shape or g.dtype != w.dtype:
            continue
        if g.ndim != x.ndim:  # a reduced dimension: compare along it kept
            g, w = np.expand_dims(g, dim), np.expand_dims(w, dim)
        if g.shape[:dim] + g.shape[dim + 1 :] != x.shape[:dim] + x.shape[dim + 1 :]:
            continue
        if g.min(initial=0) < -x.shape[dim] or g.max(initial=0) >= x.shape[dim]:
            continue
        a, b = np.take_along_axis(x, g, dim), np.take_along_axis(x, w, dim)
        if np.array_equal(a, b, equal_nan=True):
            fixed[i] = want[i]
    return fixed


@dataclass
class Generation:
    """Greedy decoding through a static-cache export: `prompt` (1 x length token ids) in one
    call, then one call per token, each call's new buffer values (the state, after the
    logits) fed to the next, starting from `state`; the `count` tokens must be `want`."""

    prompt: Any
    state: list[Any]
    count: int
    want: list[int]


def greedy(vm: Any, generation: Generation) -> list[int]:
    """The tokens the module generates (`vm`: a `backends.Compiled`)."""
    import numpy as np

    state = [vm.tensor(v) for v in generation.state]

    def step(ids: Any, positions: Any) -> int:
        nonlocal state
        out = vm(vm.tensor(ids), vm.tensor(positions), *state)
        outs = [out] if hasattr(out, "numpy") else list(out)
        state = outs[len(outs) - len(state) :] if state else []
        return int(np.argmax(outs[0].numpy()[0, -1]))

    prompt = np.asarray(generation.prompt)
    length = prompt.shape[1]
    got = [step(prompt, np.arange(length, dtype="int64"))]
    for position in range(length, length + generation.count - 1):
        got.append(step(np.array([[got[-1]]], "int64"), np.array([position], "int64")))
    return got


def generation_verdict(got: list[int], generation: Generation) -> str:
    want = generation.want
    wrong = next((i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), None)
    if wrong is None:
        return ""
    return f"token {wrong} of {generation.count}: {got[wrong]}, PyTorch {want[wrong]}"
