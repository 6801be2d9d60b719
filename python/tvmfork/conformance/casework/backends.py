"""Where a compiled case runs: this machine's CPU, a device of an RPC tracker (the library
linked by the cross compiler and uploaded), later on a device that has only TVM's runtime
(a bundle: the library, its calls and their references written into a folder, `bundle`), or
nowhere (compile-only: each CUDA kernel assembled by nvcc). The run configuration
(`case.run`) says which."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from . import bundle
from .case import Case, CaseFailed, CompileOnly, last_line
from .compare import leaves
from .judge import Check, Generation, verdict
from .spec import Remote


def tvm_target(target: str) -> Any:
    """ "host": this machine's ISA; a JSON object ({"kind": "llvm", "mtriple": ...}) or a
    target string as tvm.target.Target takes them."""
    import tvm

    if target == "host":
        return tvm.target.Target.from_device("cpu")
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


class Bundled(Compiled):
    """A compiled case written into its bundle folder (`case.run.bundle`), not run here: each
    call goes into the folder with what its outputs are held to (`checked`), for the
    device's runner."""

    def __init__(self, writer: bundle.Writer) -> None:
        super().__init__(None, None)
        self.writer = writer

    def tensor(self, x: Any) -> Any:
        import numpy as np

        return np.asarray(x)

    def __call__(self, *args: Any) -> Any:
        raise CaseFailed("a bundled case runs on the device: its calls go through `checked`")


def checked(case: Case, vm: Compiled, check: Check) -> list[Any]:
    """`vm` called on `check.args`, its outputs held to `check` (CaseFailed with the problem
    where they do not hold); the arguments as the module takes them, for timing. A bundled
    case writes the check down instead, for the device."""
    case.enter("run")
    if isinstance(vm, Bundled):
        vm.writer.add(check)
        return []
    args = [vm.tensor(a) for a in check.args]
    t = time.perf_counter()
    got = leaves(vm(*args))
    case.times.setdefault("first_run_ms", (time.perf_counter() - t) * 1e3)
    case.enter("numerics")
    problem, info = verdict(got, check)
    if "rel_err" in info:
        info["rel_err"] = max(info["rel_err"], case.info.get("rel_err", 0.0))
    case.info.update(info)
    if problem:
        raise CaseFailed(problem)
    return args


def generated(case: Case, vm: Compiled, generation: Generation) -> None:
    """Greedy decoding (`judge.greedy`) held to PyTorch's tokens; a bundled case writes it
    down for the device."""
    from .judge import generation_verdict, greedy

    case.enter("run")
    if isinstance(vm, Bundled):
        vm.writer.add(generation)
        return
    got = greedy(vm, generation)
    case.enter("numerics")
    case.info["tokens"] = generation.count
    problem = generation_verdict(got, generation)
    if problem:
        raise CaseFailed(problem)


def compile_case(mod: Any, case: Case) -> Compiled:
    """`mod` compiled for the run's target and loaded where the run says; a compile-only run
    assembles the kernels and ends the case (CompileOnly); a bundled one is written into its
    folder (`Bundled`)."""
    import tvm
    from tvm import relax

    case.enter("compile")
    t = time.perf_counter()
    resolved = tvm_target(case.run.target)
    case.info["tvm_target"] = str(resolved)
    ex = tvm.compile(mod, target=resolved)
    case.times["compile_s"] = time.perf_counter() - t
    if case.run.bundle:
        return bundled(ex, case)
    if case.run.assemble:
        assemble(ex, list(case.run.assemble), case)
        raise CompileOnly()
    if case.run.remote is not None:
        return remote_vm(ex, case.run.remote, case)
    return Compiled(relax.VirtualMachine(ex, tvm.cpu()), tvm.cpu())


def cuda_sources(ex: Any) -> list[str]:
    """The CUDA source of each CUDA module `ex` holds."""

    def cuda_modules(m: Any) -> list[Any]:
        return ([m] if m.kind == "cuda" else []) + [c for i in m.imports for c in cuda_modules(i)]

    return [m.inspect_source("") for m in cuda_modules(ex.mod)]


def fatbins(sources: list[str], archs: list[str]) -> list[bytes]:
    """Each CUDA source compiled to PTX by nvcc and assembled by ptxas into a fatbin for each
    of `archs`; a kernel nvcc or ptxas refuses fails the case."""
    import subprocess
    import tempfile

    # PTX once, for the oldest architecture; ptxas then assembles it for each one
    oldest = min(archs, key=lambda a: int(a[3:].rstrip("af")))
    gencode = [f"-arch=compute_{oldest[3:]}", f"-code={','.join(archs)}"]
    out = []
    with tempfile.TemporaryDirectory(prefix="tvmfork-cuda-") as tmp:
        for i, src in enumerate(sources):
            cu = os.path.join(tmp, f"kernels{i}.cu")
            with open(cu, "w") as f:
                f.write(src)
            fatbin = cu[:-3] + ".fatbin"
            cmd = ["nvcc", "--fatbin", "-O3", "-w", *gencode, "-o", fatbin, cu]
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                lines = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
                raise CaseFailed(f"nvcc ({','.join(archs)}): {' | '.join(lines[-3:])[:400]}")
            with open(fatbin, "rb") as f:
                out.append(f.read())
    return out


def assemble(ex: Any, archs: list[str], case: Case) -> None:
    """Each CUDA module's kernels assembled for each of `archs` (`fatbins`), then dropped."""
    case.enter("assemble")
    t = time.perf_counter()
    sources = cuda_sources(ex)
    fatbins(sources, archs)
    case.times["assemble_s"] = time.perf_counter() - t
    case.info["kernels_assembled_for"] = ",".join(archs)
    case.info["cuda_source_kb"] = round(sum(len(s) for s in sources) / 1024, 1)


def bundled(ex: Any, case: Case) -> Bundled:
    """`ex` exported into the case's bundle folder (`case.run.bundle`) as a library the
    device's runtime loads, with its CUDA kernels assembled here for the run's architectures
    (`bundle`: the device needs no CUDA compiler)."""
    from pathlib import Path

    case.enter("bundle")
    t = time.perf_counter()
    folder = Path(case.run.bundle)
    writer = bundle.Writer(folder)
    ex.export_library(str(folder / bundle.LIBRARY))
    sources = cuda_sources(ex)
    if sources:
        archs = list(case.run.assemble)
        if not archs:
            raise CaseFailed("CUDA kernels to bundle, and no architecture to assemble them for")
        (folder / bundle.KERNELS).mkdir(exist_ok=True)
        for src, fatbin in zip(sources, fatbins(sources, archs), strict=True):
            (folder / bundle.KERNELS / f"{bundle.source_digest(src)}.fatbin").write_bytes(fatbin)
        case.info["kernels_assembled_for"] = ",".join(archs)
    case.times["bundle_s"] = time.perf_counter() - t
    case.written = writer
    return Bundled(writer)


ELF_MACHINES = {3: "x86", 40: "arm (32-bit)", 62: "x86_64", 183: "aarch64", 243: "riscv"}


def elf_machine(path: str) -> str:
    """The architecture an ELF shared library is built for (its header's e_machine)."""
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        return "a non-ELF format"
    code = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return ELF_MACHINES.get(code, f"ELF machine {code}")


def remote_vm(ex: Any, remote: Remote, case: Case) -> Compiled:
    """`ex` linked by the cross compiler, uploaded to a device the tracker hands out for the
    key (a fresh session each case: a device that died serves no later case), and loaded
    there."""
    import tempfile

    from tvm import relax, rpc
    from tvm.support import cc

    case.enter("upload")
    host, port = remote.tracker.rsplit(":", 1)
    key = remote.key
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tvmfork-rpc-") as tmp:
        lib = os.path.join(tmp, "case.so")
        compiler = remote.cross_cc
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
