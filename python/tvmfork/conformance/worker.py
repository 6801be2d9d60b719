"""The conformance worker: runs cases in one TVM environment (a stock or a fork venv).

Run by path with that venv's interpreter (`python worker.py`); it imports nothing of tvmfork,
only the standard library and what the venv has (tvm, torch, onnx, onnxruntime). It reads one
JSON case a line on stdin and answers on its stdout with JSON lines: `{"stage": ...}` when a
stage begins (so a crash or a hang is charged to the stage it happened in) and one final
`{"result": {...}}`. Everything else the case prints (TVM, LLVM, warnings) goes to stderr, so
stdout stays the protocol.

Stages, in order: load (build the model / read the files), export (torch.export; torch cases),
import (the Relax frontend), compile (tvm.compile), upload (remote devices only: the library
linked by the cross compiler, a fresh RPC session from the tracker, the library loaded there),
run (the VM), numerics (the comparison with the reference, computed here). A case that passes
them all is `ok`. Compile-only targets (CUDA without a GPU) end after assemble: each kernel
of the compiled module assembled by nvcc (ptxas) for each architecture asked; `ok` there means
compiled and assembled.

`python worker.py gen-onnx-node DIR` writes ONNX's node conformance cases, from the generators
the onnx wheel ships, into DIR in ONNX's own layout (model.onnx, test_data_set_0/input_N.pb,
output_N.pb) plus DIR/cases.json.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

try:  # imported as part of tvmfork (unit tests)
    from tvmfork.conformance.spec import (
        ASSEMBLE_VAR,
        CROSS_CC_VAR,
        EXTRA_PATH_VAR,
        RPC_VAR,
        TARGET_VAR,
        THREADS_VAR,
        Spec,
    )
except ImportError:  # run as a script inside a TVM venv, beside spec.py
    from spec import (  # type: ignore[no-redef,import-not-found]
        ASSEMBLE_VAR,
        CROSS_CC_VAR,
        EXTRA_PATH_VAR,
        RPC_VAR,
        TARGET_VAR,
        THREADS_VAR,
        Spec,
    )

PROTO = sys.stdout


def send(obj: dict[str, Any]) -> None:
    PROTO.write(json.dumps(obj) + "\n")
    PROTO.flush()


class CaseFailed(Exception):
    """The case stopped at its current stage with this message (not a harness error)."""


class CompileOnly(Exception):  # not an error: the end of a compile-only case
    """The case compiled and assembled on a compile-only target: it ends there, ok."""


class Case:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.stage = "load"
        self.times: dict[str, float] = {}
        self.info: dict[str, Any] = {}

    def enter(self, stage: str) -> None:
        self.stage = stage
        send({"stage": stage})


def last_line(exc: BaseException) -> str:
    """The error's most telling line: TVM errors end with the check that failed."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines and lines[0] == "Compilation error:":  # a compiler's: its first message, not argv
        problem = next((ln for ln in lines[1:] if "error" in ln or "ld:" in ln), lines[-1])
        return f"{type(exc).__name__}: {problem}"[:400]
    for ln in reversed(lines):
        if "Check failed" in ln or ln.startswith(("InternalError", "TVMError", "ValueError")):
            return f"{type(exc).__name__}: {ln}"[:400]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:400]


def export_reason(exc: BaseException) -> str:
    """torch.export's reason for refusing a program: its message's first line and first
    detail ("Constraints violated (seq)! ... - Not all values of seq ... satisfy the generated
    guard 7 <= ..."), not the hint it ends with."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    detail = next((ln for ln in lines[1:] if ln.startswith("- ")), "")
    head = lines[0] if lines else ""
    return f"{type(exc).__name__}: {head} {detail}".strip()[:400]


# --- values -------------------------------------------------------------------------------


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
# (the fork's patch build-each-kernel-for-every-x86-64-level-mcpu-lists; stock warns that the
# mcpu is not valid and compiles for the generic CPU)
PORTABLE = {"kind": "llvm", "mcpu": "x86-64,x86-64-v3,x86-64-v4"}


def tvm_target(target: str) -> Any:
    """ "host": this machine's ISA; "portable": PORTABLE; a JSON object ({"kind": "llvm",
    "mtriple": ...}) or a target string as tvm.target.Target takes them."""
    import tvm

    if target == "host":
        return tvm.target.Target.from_device("cpu")
    if target == "portable":
        return tvm.target.Target(PORTABLE)
    return tvm.target.Target(json.loads(target) if target.startswith("{") else target)


class Compiled:
    """A compiled module on its device: this machine's CPU, or a device of an RPC tracker.
    `tensor` puts an array there; calling it runs `main` and returns its result (a remote
    call goes through set_input / invoke_stateful / get_outputs: RPC returns no tuples)."""

    def __init__(self, vm: Any, device: Any, session: Any = None) -> None:
        self.vm, self.device, self.session = vm, device, session

    def tensor(self, x: Any) -> Any:
        import tvm

        return tvm.runtime.tensor(x, self.device)

    def __call__(self, *args: Any) -> Any:
        if self.session is None:
            return self.vm["main"](*args)
        self.vm.set_input("main", *args)
        self.vm.invoke_stateful("main")
        return self.vm.get_outputs("main")


def tvm_vm(mod: Any, target: str, case: Case) -> Compiled:
    import tvm
    from tvm import relax

    case.enter("compile")
    t = time.perf_counter()
    resolved = tvm_target(target)
    case.info["tvm_target"] = str(resolved)
    ex = tvm.compile(mod, target=resolved)
    case.times["compile_s"] = time.perf_counter() - t
    archs = os.environ.get(ASSEMBLE_VAR)
    if archs:
        assemble(ex, archs.split(","), case)
        raise CompileOnly()
    rpc = os.environ.get(RPC_VAR)
    if rpc:
        return remote_vm(ex, rpc, case)
    return Compiled(relax.VirtualMachine(ex, tvm.cpu()), tvm.cpu())


def assemble(ex: Any, archs: list[str], case: Case) -> None:
    """Each CUDA module's source compiled to PTX by nvcc and assembled by ptxas into a fatbin
    for each of `archs`; a kernel nvcc or ptxas refuses fails the case."""
    import subprocess
    import tempfile

    case.enter("assemble")
    t = time.perf_counter()

    def cuda_modules(m: Any) -> list[Any]:
        return ([m] if m.kind == "cuda" else []) + [c for i in m.imports for c in cuda_modules(i)]

    sources = [m.inspect_source("") for m in cuda_modules(ex.mod)]
    # PTX once, for the oldest architecture; ptxas then assembles it for each one
    oldest = min(archs, key=lambda a: int(a[3:].rstrip("af")))
    gencode = [f"-arch=compute_{oldest[3:]}", f"-code={','.join(archs)}"]
    with tempfile.TemporaryDirectory(prefix="tvmfork-cuda-") as tmp:
        for i, src in enumerate(sources):
            cu = os.path.join(tmp, f"kernels{i}.cu")
            with open(cu, "w") as f:
                f.write(src)
            cmd = ["nvcc", "--fatbin", "-O3", "-w", *gencode, "-o", cu[:-3] + ".fatbin", cu]
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                lines = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
                raise CaseFailed(f"nvcc ({','.join(archs)}): {' | '.join(lines[-3:])[:400]}")
    case.times["assemble_s"] = time.perf_counter() - t
    case.info["kernels_assembled_for"] = ",".join(archs)
    case.info["cuda_source_kb"] = round(sum(len(s) for s in sources) / 1024, 1)


ELF_MACHINES = {3: "x86", 40: "arm (32-bit)", 62: "x86_64", 183: "aarch64", 243: "riscv"}


def elf_machine(path: str) -> str:
    """The architecture an ELF shared library is built for (its header's e_machine)."""
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        return "a non-ELF format"
    code = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return ELF_MACHINES.get(code, f"ELF machine {code}")


def remote_vm(ex: Any, rpc_spec: str, case: Case) -> Compiled:
    """`ex` linked by the cross compiler, uploaded to a device the tracker HOST:PORT hands
    out for KEY (a fresh session each case: a device that died serves no later case), and
    loaded there."""
    import tempfile

    from tvm import relax, rpc
    from tvm.support import cc

    case.enter("upload")
    host, port, key = rpc_spec.rsplit(":", 2)
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tvmfork-rpc-") as tmp:
        lib = os.path.join(tmp, "case.so")
        compiler = os.environ.get(CROSS_CC_VAR)
        # get_target_triple: a module with no kernels (shapes only) is packed into an object
        # of that triple, not of this machine's (which the cross linker refuses)
        fcompile = (
            cc.cross_compiler(compiler, get_target_triple=cc.get_target_by_dump_machine(compiler))
            if compiler
            else None
        )
        ex.export_library(lib, fcompile=fcompile)
        tracker = rpc.connect_tracker(host, int(port))
        queues = tracker.summary().get("queue_info", {})
        if key not in queues:
            have = ", ".join(sorted(queues)) or "none"
            raise CaseFailed(
                f"the tracker {host}:{port} has no device under key {key!r} (keys: {have})"
            )
        session = tracker.request(key, priority=1, max_retry=1)
        tracker.close()
        session.upload(lib)
        machine = elf_machine(lib)
    try:
        loaded = session.load_module("case.so")
    except Exception as exc:
        raise CaseFailed(
            f"the device cannot load the library, which is built for {machine}: is the "
            f"device {machine}? ({last_line(exc)})"
        ) from exc
    device = session.cpu()
    case.times["upload_s"] = time.perf_counter() - t
    return Compiled(relax.VirtualMachine(loaded, device), device, session)


def release_devices() -> None:
    """End the case's RPC session now, not when the collector gets to it: the device goes
    back to the tracker only when its session's connection closes, and a session kept alive
    by a reference cycle (an exception's frames) would hold it through the next request."""
    import gc

    gc.collect()


def interleaved(fns: dict[str, Any], reps: int, budget_s: float) -> dict[str, float]:
    """Median ms of each fn, the fns called in turn (one warm-up each), within a budget.

    With more than one thread each timed call follows an untimed one of the same fn: the
    runtime timed before keeps its pool's threads spinning for a while after it returns
    (ONNX Runtime's and OpenMP's do), and on a machine with no more cores than threads they
    hold a core the next runtime's parallel loops wait for. Measured on 2 cores, 2 threads:
    squeezenet1_1 on the fork took 22 ms right after a PyTorch call, 10 ms after its own
    (a user running one runtime sees the latter).
    """
    samples: dict[str, list[float]] = {k: [] for k in fns}
    settle = (threads() or 1) > 1
    for fn in fns.values():
        fn()
    start = time.perf_counter()
    for _ in range(reps):
        for k, fn in fns.items():
            if settle:
                fn()
            t = time.perf_counter()
            fn()
            samples[k].append((time.perf_counter() - t) * 1e3)
        if time.perf_counter() - start > budget_s:
            break
    return {f"{k}_ms": statistics.median(v) for k, v in samples.items()}


# --- torch cases ----------------------------------------------------------------------------


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


def run_torch(case: Case, target: str) -> None:
    """A torch-module case: CASES[name]() gives (model, inputs), or (model, inputs, dynamic)
    where `dynamic` exports some input dimensions as symbols and runs the one compiled
    module at several sizes (`run_dynamic`)."""
    import torch
    import torchvision_shim  # beside this file
    from tvm.relax.frontend.torch import from_exported_program

    torchvision_shim.load()  # before a suite imports transformers, which imports torchvision
    spec = case.spec
    torch.manual_seed(0)
    suite = suite_module(spec.module)
    made = suite.from_pretrained(spec.hf) if spec.hf else suite.CASES[spec.name]()
    model, inputs, dynamic = (*made, None) if len(made) == 2 else made
    model = model.eval()
    inputs = tuple(inputs)
    if dynamic and "generate" in dynamic:
        run_generate(case, target, model, inputs[0], dynamic)
        return
    if spec.route == "onnx":
        run_torch_onnx(case, target, model, inputs)
        return
    with torch.no_grad():
        want = leaves(model(*inputs))
    case.enter("export")
    with torch.no_grad():
        shapes = dynamic_shapes(model, inputs, dynamic) if dynamic else None
        exported = torch.export.export(model, inputs, dynamic_shapes=shapes)
    case.enter("import")
    mod = from_exported_program(exported, keep_params_as_input=False)
    vm = tvm_vm(mod, target, case)
    if dynamic:
        run_dynamic(case, vm, model, inputs, dynamic)
        return
    case.enter("run")

    args = [vm.tensor(x.detach().numpy()) for x in inputs]
    t = time.perf_counter()
    got = leaves(vm(*args))
    case.times["first_run_ms"] = (time.perf_counter() - t) * 1e3
    case.enter("numerics")
    problem, case.info["rel_err"] = compare(got, want, 0, 0, spec.rel_max)
    if problem:
        raise CaseFailed(problem)
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
        case.times.update(interleaved(fns, spec.reps, spec.budget_s))


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

    worst = 0.0
    for size in dynamic["sizes"]:
        case.enter("run")
        args = tuple(inputs)
        for i, per_input in dynamic["dims"].items():
            for d in per_input:
                args = (*args[:i], resized(args[i], d, size), *args[i + 1 :])
        with torch.no_grad():
            want = leaves(model(*args))
        tvm_args = [vm.tensor(x.detach().numpy()) for x in args]
        got = leaves(vm(*tvm_args))
        case.enter("numerics")
        problem, rel = compare(got, want, 0, 0, case.spec.rel_max)
        worst = max(worst, rel)
        if problem:
            raise CaseFailed(f"size {size}: {problem}")
        if case.spec.reps:

            def eager(args: tuple[Any, ...] = args) -> None:
                with torch.no_grad():
                    model(*args)

            fns = {"torch": eager, "tvm": lambda a=tvm_args: vm(*a)}
            times = interleaved(fns, case.spec.reps, case.spec.budget_s)
            case.times.update({f"{k}@{size}": v for k, v in times.items()})
    case.info["rel_err"] = worst


def run_generate(
    case: Case, target: str, model: Any, prompt: Any, generate: dict[str, Any]
) -> None:
    """Greedy generation through transformers' static-cache export: the prompt in one call,
    then one call per token, each call's new buffer values (the KV cache, as the importer
    returns them after the logits) fed to the next; the tokens must be `model.generate`'s.

    Nothing of the fork's runner is used, so stock and fork run the same loop; a module
    that returns no buffers runs without state (and generates wrong tokens)."""
    import numpy as np
    import torch
    import tvm
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
    vm = tvm_vm(mod, target, case)
    case.enter("run")
    state = [vm.tensor(v.numpy()) for v in first]

    def step(ids: Any, positions: Any) -> int:
        nonlocal state
        out = vm(vm.tensor(ids), vm.tensor(positions), *state)
        outs = list(out) if not isinstance(out, tvm.runtime.Tensor) else [out]
        state = outs[len(outs) - len(state) :] if state else []
        return int(np.argmax(outs[0].numpy()[0, -1]))

    got = [step(prompt.numpy(), np.arange(length, dtype="int64"))]
    for position in range(length, length + count - 1):
        got.append(step(np.array([[got[-1]]], "int64"), np.array([position], "int64")))
    case.enter("numerics")
    case.info["tokens"] = count
    wrong = next((i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), None)
    if wrong is not None:
        raise CaseFailed(f"token {wrong} of {count}: {got[wrong]}, PyTorch {want[wrong]}")


def threads() -> int | None:
    """The thread count asked for (CONFORMANCE_THREADS), for PyTorch and ONNX Runtime; TVM's
    pool reads TVM_NUM_THREADS, which the runner sets alongside."""
    n = os.environ.get(THREADS_VAR)
    return int(n) if n else None


def ort_session(path: str) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads():
        opts.intra_op_num_threads = threads()
        opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


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
            sess = ort_session(path)
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


# --- onnx cases -----------------------------------------------------------------------------


def read_pb(path: Path) -> Any:
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def onnx_inputs(model: Any) -> list[Any]:
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def random_inputs(model: Any) -> list[Any]:
    """Inputs for an ONNX file with no test data: seeded random values of the declared types;
    a symbolic dimension is 1."""
    import numpy as np
    from onnx import helper

    rng = np.random.default_rng(0)
    out = []
    for vi in onnx_inputs(model):
        tt = vi.type.tensor_type
        dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        if dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.integers(0, 2, shape).astype(dt))
        else:
            out.append(rng.integers(0, 8, shape).astype(dt))
    return out


def run_onnx(case: Case, target: str) -> None:
    """An ONNX file: its test data as the reference, else ONNX Runtime on seeded inputs."""
    import onnx

    spec = case.spec
    model = onnx.load(spec.model)
    data = Path(spec.data) if spec.data else None
    names = [vi.name for vi in onnx_inputs(model)]
    want: list[Any] | None = None
    if data is not None:
        inputs = [read_pb(data / f"input_{i}.pb") for i in range(len(names))]
        n_out = len(list(data.glob("output_*.pb")))
        want = [read_pb(data / f"output_{i}.pb") for i in range(n_out)]
    else:
        inputs = random_inputs(model)
    sess = ort_session(spec.model) if spec.ort else None
    if sess is not None and want is None:
        want = sess.run(None, dict(zip(names, inputs, strict=True)))
    if want is None:
        raise CaseFailed("no reference: the case has no test data and ONNX Runtime is off")
    check_onnx(case, target, model, inputs, want, sess)


def run_torch_onnx(case: Case, target: str, model: Any, inputs: tuple[Any, ...]) -> None:
    """The torch model exported to ONNX as a user would (torch.onnx.export, dynamo) and
    imported with from_onnx; ONNX Runtime on the same file is the reference (whether ORT
    agrees with PyTorch is noted, not judged: `ort_vs_torch`)."""
    import tempfile

    import onnx
    import torch

    with torch.no_grad():
        torch_out = leaves(model(*inputs))
    case.enter("export")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(model, inputs, dynamo=True).save(path)
        onnx_model = onnx.load(path)
        sess = ort_session(path)
    arrays = [x.detach().numpy() for x in inputs]
    names = [vi.name for vi in onnx_inputs(onnx_model)]
    want = sess.run(None, dict(zip(names, arrays, strict=True)))
    problem, _ = compare(want, torch_out, 0, 0, case.spec.rel_max)
    case.info["ort_vs_torch"] = problem or "agrees"
    check_onnx(case, target, onnx_model, arrays, want, sess)


def check_onnx(
    case: Case, target: str, model: Any, inputs: list[Any], want: list[Any], sess: Any
) -> None:
    """Import, compile and run an ONNX model on `inputs` (in the graph's input order) and
    compare with `want`; with reps, time TVM and ONNX Runtime (`sess`, if any)."""
    from tvm.relax.frontend.onnx import from_onnx

    spec = case.spec
    names = [vi.name for vi in onnx_inputs(model)]
    case.enter("import")
    mod = from_onnx(model, keep_params_in_input=False)
    vm = tvm_vm(mod, target, case)
    case.enter("run")
    by_name = dict(zip(names, inputs, strict=True))
    params = [str(getattr(p, "name", None) or p.name_hint) for p in mod["main"].params]
    ordered = [by_name[n] for n in params] if set(params) <= set(by_name) else inputs
    args = [vm.tensor(x) for x in ordered]
    t = time.perf_counter()
    got = leaves(vm(*args))
    case.times["first_run_ms"] = (time.perf_counter() - t) * 1e3
    case.enter("numerics")
    problem, rel = compare(got, want, spec.rtol, spec.atol, spec.rel_max)
    if spec.rel_max:
        case.info["rel_err"] = rel
    if problem:
        raise CaseFailed(problem)
    if spec.reps:
        fns = {"tvm": lambda: vm(*args)}
        if sess is not None:
            feed = dict(zip(names, inputs, strict=True))
            fns["ort"] = lambda: sess.run(None, feed)
        case.times.update(interleaved(fns, spec.reps, spec.budget_s))


# --- the loop -------------------------------------------------------------------------------


def run_case(spec: Spec, target: str) -> dict[str, Any]:
    case = Case(spec)
    status, error = "ok", ""
    send({"stage": "load"})
    try:
        (run_torch if spec.kind == "torch" else run_onnx)(case, target)
    except CompileOnly:
        pass
    except CaseFailed as exc:
        status, error = ("wrong" if case.stage == "numerics" else "error"), str(exc)
    except Exception as exc:
        status, error = "error", export_reason(exc) if case.stage == "export" else last_line(exc)
        traceback.print_exc(file=sys.stderr)
    if os.environ.get(RPC_VAR):
        release_devices()
    stage = "ok" if status == "ok" else case.stage
    return {"status": status, "stage": stage, "error": error, **case.times, **case.info}


def serve() -> int:
    target = os.environ.get(TARGET_VAR, "llvm")
    import tvm

    if threads():
        import torch

        torch.set_num_threads(threads())
    send({"ready": True, "tvm": tvm.__version__, "target": target, "threads": threads()})
    for line in sys.stdin:
        if not line.strip():
            continue
        send({"result": run_case(Spec.from_json(json.loads(line)), target)})
        sys.stderr.flush()
    return 0


# --- onnx node case generation ----------------------------------------------------------------


def gen_onnx_node(out: Path) -> int:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnx.backend.test.case.node import collect_testcases

    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for tc in collect_testcases():
        entry: dict[str, Any] = {"name": tc.name, "rtol": tc.rtol, "atol": tc.atol}
        if tc.model is None or not tc.data_sets:
            entry["skip"] = "no model or no data in the generator"
            cases.append(entry)
            continue
        d = out / tc.name
        data = d / "test_data_set_0"
        data.mkdir(parents=True, exist_ok=True)
        onnx.save(tc.model, str(d / "model.onnx"))
        inputs, outputs = tc.data_sets[0]
        for kind, values in (("input", inputs), ("output", outputs)):
            for i, v in enumerate(values):
                if isinstance(v, onnx.TensorProto):
                    proto = v
                elif isinstance(v, (np.ndarray, np.generic)):
                    proto = numpy_helper.from_array(np.asarray(v))
                else:
                    what = "sequence" if isinstance(v, list) else type(v).__name__
                    if v is None:
                        what = "optional (None)"
                    entry["skip"] = f"{kind} {i} is a {what} value: only tensors are run"
                    break
                (data / f"{kind}_{i}.pb").write_bytes(proto.SerializeToString())
            if "skip" in entry:
                break
        entry["model"] = str(d / "model.onnx")
        entry["data"] = str(data)
        cases.append(entry)
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    return 0


def list_module(path: str) -> int:
    """The suite module's case names; if it cannot be imported, why (`{"error": ...}`)."""
    try:
        names = sorted(load_module(path).CASES)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        send({"error": last_line(exc)})
        return 0
    send({"cases": names})
    return 0


def main(argv: list[str]) -> int:
    global PROTO
    # The protocol keeps the real stdout; anything else printed goes to stderr.
    PROTO = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    extra = os.environ.get(EXTRA_PATH_VAR)
    if extra:  # the packages of `--with`, after the venv's own
        sys.path.append(extra)
    if argv[:1] == ["gen-onnx-node"]:
        return gen_onnx_node(Path(argv[1]))
    if argv[:1] == ["list"]:
        return list_module(argv[1])
    return serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
