"""Patch: well-formed errors say what is wrong and where (BUGS.md section 3).

On stock 0.26.0 the TVMScript parser reports only "Program is not well-formed" at the
`class Module:` line; on the fork it gives the checker's reason and points at the binding.
A function whose body contradicts its annotated return type parses silently on stock; the
fork reports it at the `return`. (The TIR path's location needs the native patch:
test_tir_well_formed_location.py.)
"""

from __future__ import annotations

import pytest
import tvm
from tvm.script.parser import ir as I
from tvm.script.parser import relax as R
from tvm.script.parser import tirx as T

from .diag import line_of, reported_line


def test_seed_call_tir_shape_mismatch() -> None:
    """apache/tvm#17211: conv2d's (1, 64, 56, 56) output fed to (64, 64, 56, 56) buffers."""
    with pytest.raises(tvm.error.DiagnosticError) as err:

        @I.ir_module
        class Module:
            @T.prim_func
            def relu(
                x: T.Buffer((64, 64, 56, 56), "float32"), y: T.Buffer((64, 64, 56, 56), "float32")
            ):
                for i, j, k, m in T.grid(64, 64, 56, 56):
                    with T.sblock("relu"):
                        vi, vj, vk, vm = T.axis.remap("SSSS", [i, j, k, m])
                        y[vi, vj, vk, vm] = T.max(x[vi, vj, vk, vm], T.float32(0))

            @R.function
            def main(
                x: R.Tensor((1, 3, 224, 224), "float32"), w: R.Tensor((64, 3, 7, 7), "float32")
            ):
                cls = Module
                with R.dataflow():
                    lv = R.nn.conv2d(x, w, strides=4, padding=2)
                    gv = R.call_tir(  # seed
                        cls.relu, (lv,), out_ty=R.Tensor((64, 64, 56, 56), "float32")
                    )
                    R.output(gv)
                return gv

    message = str(err.value)
    assert "Argument 0 type mismatch" in message
    assert "(FValidate) for relax.call_tir identified error" in message
    assert "ir.Op(" not in message  # the op by its name, not a 400-character repr
    assert 'expected R.Tensor((64, 64, 56, 56), dtype="float32")' in message
    assert 'given R.Tensor((1, 64, 56, 56), dtype="float32")' in message
    assert reported_line(message) == line_of(__file__, "# seed")


def test_annotated_binding_mismatch() -> None:
    with pytest.raises(tvm.error.DiagnosticError) as err:

        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            y: R.Tensor((3, 2), "float32") = R.add(x, x)  # annotated
            return y

    message = str(err.value)
    assert "annotated as R.Tensor((3, 2)" in message and "R.Tensor((2, 3)" in message
    assert reported_line(message) == line_of(__file__, "# annotated")


def test_function_return_mismatch() -> None:
    with pytest.raises(tvm.error.DiagnosticError) as err:

        @R.function
        def main(x: R.Tensor((1, 4), "float32")) -> R.Tensor((2, 4), "float32"):
            y = R.add(x, x)
            return y  # returned

    message = str(err.value)
    assert 'annotated to return R.Tensor((2, 4), dtype="float32")' in message
    assert 'body returns R.Tensor((1, 4), dtype="float32")' in message
    assert reported_line(message) == line_of(__file__, "# returned")


def test_return_decided_at_run_time_still_parses() -> None:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")) -> R.Tensor((2, 4), "float32"):
        y = R.add(x, x)
        return y

    assert isinstance(main, tvm.relax.Function)
