"""Native patch: a TIR well-formed error points at the statement (BUGS.md section 3).

On stock 0.26.0 the TIR checker throws without saying which node it failed on, so the
TVMScript parser points at the `class Module:` (or `def`) line. On the fork the checker's
error carries the statement, and the parser points at its line.
"""

from __future__ import annotations

import pytest
import tvm
from tvm.script.parser import ir as I
from tvm.script.parser import tirx as T

from .diag import line_of, reported_line


def test_loop_var_used_inside_a_block() -> None:
    with pytest.raises(tvm.error.DiagnosticError) as err:

        @I.ir_module
        class Module:
            @T.prim_func(s_tir=True)
            def main(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
                for i in range(8):
                    with T.sblock("b"):
                        vi = T.axis.spatial(8, i)
                        b[vi] = a[i]  # uses the loop var

    message = str(err.value)
    assert "Loop iterator var i is defined outside of any block" in message
    assert reported_line(message) == line_of(__file__, "# uses the loop var")
