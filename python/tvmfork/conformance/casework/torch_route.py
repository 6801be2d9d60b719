"""The torch route: a model from a suite module (`CASES[name]()`) or a HuggingFace folder,
through torch.export and from_exported_program (PyTorch eager the reference), at fixed or
dynamic sizes, or generating tokens through transformers' static-cache export; or exported
to ONNX as a user would (`onnx_route.run_torch_onnx`)."""

from __future__ import annotations

import importlib.util
import os
import time
from typing import Any

from .backends import Compiled, checked, compile_case, generated
from .case import Case, CaseFailed, last_line
from .compare import compare, leaves, to_numpy
from .judge import AS_ACCURATE, Check, Generation
from .onnx_route import ort_session, run_torch_onnx
from .timing import interleaved


def load_module(path: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"tvmfork_suite_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise CaseFailed(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_MODULES: dict[str, Any] = {}


def suite_module(path: str) -> Any:
    if path not in _MODULES:
        _MODULES[path] = load_module(path)
    return _MODULES[path]


def run_torch(case: Case) -> None:
    """A torch-module case: CASES[name]() gives (model, inputs), or (model, inputs, options)
    where options["dims"] exports some input dimensions as symbols and runs the one compiled
    module at several sizes (`run_dynamic`), options["generate"] generates tokens
    (`run_generate`), and options["float32"], the same model in float32, is the exact
    computation a half-precision model's results are also held to (`compare.as_accurate`)."""
    import torch
    import torchvision_shim  # beside this file
    from tvm.relax.frontend.torch import from_exported_program

    torchvision_shim.load()  # before a suite imports transformers, which imports torchvision
    spec = case.spec
    torch.manual_seed(0)
    suite = suite_module(spec.module)
    made = suite.from_pretrained(spec.hf) if spec.hf else suite.CASES[spec.name]()
    model, inputs, options = (*made, {}) if len(made) == 2 else made
    wide = options.pop("float32", None)
    dynamic = options or None
    model = model.eval()
    inputs = tuple(inputs)
    if dynamic and "generate" in dynamic:
        run_generate(case, model, inputs[0], dynamic)
        return
    if spec.route == "onnx":
        run_torch_onnx(case, model, inputs)
        return
    with torch.no_grad():
        want = leaves(model(*inputs))
    case.enter("export")
    with torch.no_grad():
        shapes = dynamic_shapes(model, inputs, dynamic) if dynamic else None
        exported = torch.export.export(model, inputs, dynamic_shapes=shapes)
    case.enter("import")
    mod = from_exported_program(exported, keep_params_as_input=False)
    vm = compile_case(mod, case)
    if dynamic:
        run_dynamic(case, vm, model, inputs, dynamic)
        return

    def fill(check: Check) -> None:
        # a half-precision model PyTorch itself computes far from exact: the fork's result
        # must be as close to the float32 computation as PyTorch's is (times 2)
        assert wide is not None
        with torch.no_grad():
            check.exact = leaves(wide.eval()(*widened(inputs)))
            check.nearby = [
                (leaves(model(*moved)), leaves(wide(*widened(moved))))
                for moved in nearby_inputs(inputs, NEARBY)
            ]

    floating = (p.dtype for p in model.parameters() if p.is_floating_point())
    check = Check(
        args=[to_numpy(x) for x in inputs],
        want=want,
        rel_max=spec.rel_max,
        fallback=AS_ACCURATE if wide is not None else "",
        model_dtype=str(next(floating, torch.float32)).removeprefix("torch."),
        fill=fill if wide is not None else None,
    )
    args = checked(case, vm, check)
    if spec.reps:

        def eager() -> None:
            with torch.no_grad():
                model(*inputs)

        fns = {"torch": eager, "tvm": lambda: vm(*args)}
        if spec.ort:
            ort_fn = ort_of_torch(case, model, inputs, want)
            if ort_fn is not None:
                fns["ort"] = ort_fn
        if spec.inductor:
            inductor_fn = inductor_of_torch(case, model, inputs, want)
            if inductor_fn is not None:
                fns["inductor"] = inductor_fn
        case.times.update(interleaved(fns, spec.reps, spec.budget_s, case.run.threads))


# Nearby inputs PyTorch's half-precision error is also measured on (`compare.as_accurate`)
NEARBY = 8


def widened(inputs: tuple[Any, ...]) -> list[Any]:
    """Floating-point inputs in float32 (for a model's float32 copy), others as they are."""
    return [x.float() if x.is_floating_point() else x for x in inputs]


def nearby_inputs(inputs: tuple[Any, ...], count: int) -> list[tuple[Any, ...]]:
    """`count` copies of `inputs` with each half-precision element moved by at most one
    rounding step (times 1 - 2^-p, 1 or 1 + 2^-p at random, seeded; p the dtype's mantissa
    bits), other inputs unchanged; none where no input is half precision."""
    import torch

    bits = {torch.bfloat16: 8, torch.float16: 11}
    if not any(x.dtype in bits for x in inputs):
        return []
    generator = torch.Generator().manual_seed(0)
    draws = []
    for _ in range(count):
        moved = []
        for x in inputs:
            if x.dtype in bits:
                steps = torch.randint(-1, 2, x.shape, generator=generator).float()
                x = (x.float() * (1 + steps * 2.0 ** -bits[x.dtype])).to(x.dtype)
            moved.append(x)
        draws.append(tuple(moved))
    return draws


def dynamic_shapes(model: Any, inputs: tuple[Any, ...], dynamic: dict[str, Any]) -> Any:
    """torch.export's dynamic_shapes for `dynamic` = {"dims": {input index: {dim: symbol}},
    "max": largest size}: one Dim per symbol, from 1 to max."""
    import inspect

    import torch

    dims = {
        name: torch.export.Dim(name, min=1, max=dynamic["max"])
        for per_input in dynamic["dims"].values()
        for name in per_input.values()
    }
    shapes = tuple(
        {d: dims[n] for d, n in dynamic["dims"].get(i, {}).items()} or None
        for i in range(len(inputs))
    )
    params = inspect.signature(model.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return (shapes,)  # forward(*args): the shapes of the one tuple argument
    return shapes


def resized(x: Any, dim: int, size: int) -> Any:
    """`x` tiled along `dim` and cut to `size` (token ids stay valid ids)."""
    reps = [1] * x.dim()
    reps[dim] = -(-size // x.shape[dim])
    return x.repeat(*reps).narrow(dim, 0, size)


def run_dynamic(
    case: Case, vm: Compiled, model: Any, inputs: tuple[Any, ...], dynamic: dict[str, Any]
) -> None:
    """The module compiled once, run at each of dynamic["sizes"]: each matches PyTorch; with
    reps, the median ms of TVM and PyTorch at each size (`tvm_ms@N`, `torch_ms@N`)."""
    import torch

    for size in dynamic["sizes"]:
        args = tuple(inputs)
        for i, per_input in dynamic["dims"].items():
            for d in per_input:
                args = (*args[:i], resized(args[i], d, size), *args[i + 1 :])
        with torch.no_grad():
            want = leaves(model(*args))
        check = Check(
            args=[to_numpy(x) for x in args],
            want=want,
            rel_max=case.spec.rel_max,
            label=f"size {size}: ",
        )
        tvm_args = checked(case, vm, check)
        if case.spec.reps:

            def eager(args: tuple[Any, ...] = args) -> None:
                with torch.no_grad():
                    model(*args)

            fns = {"torch": eager, "tvm": lambda a=tvm_args: vm(*a)}
            times = interleaved(fns, case.spec.reps, case.spec.budget_s, case.run.threads)
            case.times.update({f"{k}@{size}": v for k, v in times.items()})


def run_generate(case: Case, model: Any, prompt: Any, generate: dict[str, Any]) -> None:
    """Greedy generation through transformers' static-cache export: the prompt in one call,
    then one call per token, each call's new buffer values (the KV cache, as the importer
    returns them after the logits) fed to the next; the tokens must be `model.generate`'s.

    Nothing of the fork's runner is used, so stock and fork run the same loop; a module
    that returns no buffers runs without state (and generates wrong tokens)."""
    import torch
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM
    from tvm.relax.frontend.torch import from_exported_program

    lm, cache, count = model.model, generate["cache"], generate["generate"]
    lm.generation_config.cache_implementation = "static"
    lm.generation_config.cache_config = {"batch_size": 1, "max_cache_len": cache}
    length = prompt.shape[1]
    with torch.no_grad():
        want = lm.generate(
            prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=count
        )[0, length:].tolist()
    case.enter("export")
    seq = torch.export.Dim("seq", min=1, max=cache)
    with torch.no_grad():
        exported = TorchExportableModuleForDecoderOnlyLM(lm).export(
            input_ids=prompt,
            cache_position=torch.arange(length),
            dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}},
        )
    case.enter("import")
    mod = from_exported_program(exported)
    attrs = mod["main"].attrs
    first = (
        list(attrs["mutated_buffer_values"]) if attrs and "mutated_buffer_values" in attrs else []
    )
    vm = compile_case(mod, case)
    generation = Generation(prompt.numpy(), [v.numpy() for v in first], count, want)
    generated(case, vm, generation)


def ort_of_torch(case: Case, model: Any, inputs: tuple[Any, ...], want: list[Any]) -> Any:
    """ONNX Runtime on the model exported as a user would (torch.onnx.export, dynamo): the
    function to time, or None with the reason in case.info["ort_error"] (ORT is an anchor for
    the timings, not part of the verdict)."""
    import tempfile

    import torch

    try:
        with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
            path = os.path.join(tmp, "model.onnx")
            torch.onnx.export(model, inputs, dynamo=True).save(path)
            sess = ort_session(path, case.run.threads)
        feed = {i.name: x.detach().numpy() for i, x in zip(sess.get_inputs(), inputs, strict=True)}
        problem, _ = compare(sess.run(None, feed), want, 0, 0, case.spec.rel_max)
        if problem:
            raise CaseFailed(f"ONNX Runtime's result differs from PyTorch's: {problem}")
    except Exception as exc:  # any failure drops the anchor only
        case.info["ort_error"] = last_line(exc)
        return None
    return lambda: sess.run(None, feed)


def inductor_of_torch(case: Case, model: Any, inputs: tuple[Any, ...], want: list[Any]) -> Any:
    """torch.compile (Inductor, CPU, default mode) on the model: the function to time, or None
    with the reason in case.info["inductor_error"] (like ONNX Runtime, an anchor for the
    timings, not part of the verdict). Its compile time goes in times["inductor_compile_s"]."""
    import torch

    try:
        compiled = torch.compile(model)
        t = time.perf_counter()
        with torch.no_grad():
            got = leaves(compiled(*inputs))
        case.times["inductor_compile_s"] = time.perf_counter() - t
        problem, _ = compare(got, want, 0, 0, case.spec.rel_max)
        if problem:
            raise CaseFailed(f"torch.compile's result differs from PyTorch's: {problem}")
    except Exception as exc:  # any failure drops the anchor only
        case.info["inductor_error"] = last_line(exc)
        return None

    def run() -> None:
        with torch.no_grad():
            compiled(*inputs)

    return run
