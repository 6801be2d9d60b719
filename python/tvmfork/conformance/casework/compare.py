"""A case's result against its reference: both flattened to numpy arrays, then compared by
count, shape, dtype and values, as ONNX's runner checks them."""

from __future__ import annotations

from typing import Any

from .case import CaseFailed


def leaves(value: Any) -> list[Any]:
    """Flatten a TVM or torch result (tensor, tuple, list, dict) to numpy arrays, in order."""
    import numpy as np

    if type(value).__name__ == "Shape" and type(value).__module__.startswith("tvm"):
        # a shape value (R.shape, e.g. ONNX's Shape of a static input): ONNX's int64 tensor.
        # tvm_ffi's Shape is a tuple: without this it would be flattened into scalars
        return [np.array(tuple(value), dtype="int64")]
    if type(value).__name__ == "RPCObjectRef":
        raise CaseFailed(
            "the result holds a value TVM's RPC cannot bring back from the device (an object "
            "such as a shape, not a tensor): it cannot be compared"
        )
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in leaves(v)]
    if hasattr(value, "detach"):  # torch
        return [value.detach().numpy()]
    if hasattr(value, "numpy"):  # tvm.runtime.Tensor
        return [value.numpy()]
    try:  # tvm ffi Array / Shape
        return [x for v in list(value) for x in leaves(v)]
    except TypeError:
        return [np.asarray(value)]


def compare(
    got: list[Any], want: list[Any], rtol: float, atol: float, rel_max: float
) -> tuple[str, float]:
    """('', worst relative error) when `got` matches `want` (else the problem, first): count,
    shape, dtype, then values, as ONNX's runner checks them. `rel_max` > 0 compares
    max|got - want| / max|want| instead of rtol/atol (models with random weights)."""
    import numpy as np

    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}", 0.0
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}", worst
        if str(g.dtype) != str(w.dtype):
            return f"output {i}: dtype {g.dtype}, expected {w.dtype}", worst
        if w.dtype == object or w.dtype.kind in "bUS":
            if not np.array_equal(g, w):
                return f"output {i}: values differ ({int((g != w).sum())} of {w.size})", worst
            continue
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        if rel_max > 0:
            finite = np.isfinite(wf)
            if not np.array_equal(finite, np.isfinite(gf)):
                return f"output {i}: non-finite values where the reference has finite ones", worst
            scale = float(np.abs(wf[finite]).max()) if finite.any() else 0.0
            err = float(np.abs(gf - wf)[finite].max()) if finite.any() else 0.0
            rel = err / scale if scale > 0 else err
            worst = max(worst, rel)
            if not rel <= rel_max:
                return f"output {i}: relative max error {rel:.3g} > {rel_max:g}", worst
            continue
        try:
            np.testing.assert_allclose(gf, wf, rtol=rtol, atol=atol)
        except AssertionError as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            detail = "; ".join(ln for ln in lines if ln.startswith(("Mismatched", "Max")))
            return f"output {i}: {detail or 'values differ'}", worst
    return "", worst


# "portable": every kernel for each x86-64 level, the best the running CPU supports called
