"""Native patch: the LLVM codegen compares boolean values (BUGS: comparisons of boolean tensors
stopped `tvm.compile`; `compare-boolean-tensors-as-uint8` avoids them at legalization, this
fixes the codegen itself).

A TIR comparison of two bool values reached CodeGenLLVM as an `fcmp` of `i1` for `==`/`!=`
("LLVM module verification failed ... Invalid operand types for FCmp instruction") and as a
failed check for `<`, `<=`, `>`, `>=` and min/max (`t.MatchesCode(kDLFloat)`). On the fork they
are integer compares of i1 (unsigned: False < True, as NumPy orders them). The PrimFuncs here
are written in TIR, so LegalizeOps (and the Python patch) never sees them.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import te, tirx

OPS = {
    "eq": (tirx.EQ, np.equal),
    "ne": (tirx.NE, np.not_equal),
    "lt": (tirx.LT, np.less),
    "le": (tirx.LE, np.less_equal),
    "gt": (tirx.GT, np.greater),
    "ge": (tirx.GE, np.greater_equal),
    "max": (tirx.Max, np.maximum),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_bool_compare_compiles_and_matches_numpy(op: str) -> None:
    make, reference = OPS[op]
    n = 16
    a = te.placeholder((n,), "bool", name="a")
    b = te.placeholder((n,), "bool", name="b")
    c = te.compute((n,), lambda i: make(a[i], b[i]), name="c")
    f = tvm.compile(te.create_prim_func([a, b, c]), target="llvm")
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 2, n).astype(bool), rng.integers(0, 2, n).astype(bool)
    out = tvm.runtime.empty((n,), "bool", tvm.cpu())
    f(tvm.runtime.tensor(x), tvm.runtime.tensor(y), out)
    np.testing.assert_array_equal(out.numpy(), reference(x, y))
