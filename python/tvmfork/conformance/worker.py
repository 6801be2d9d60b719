"""The conformance worker: runs cases in one TVM environment (a stock or a fork venv).

Run by path with that venv's interpreter (`python worker.py`); it imports nothing of tvmfork,
only the standard library, its sibling package `casework` (this folder is on its path) and
what the venv has (tvm, torch, onnx, onnxruntime). It reads one JSON line per case on stdin,
`{"run": RunConfig, "case": Spec}` (`casework.spec.Message`: every setting of the run comes
with the case, none through the environment), and answers on its stdout with JSON lines:
`{"ready": ...}` once it has imported TVM (its version and where it was imported from),
`{"stage": ...}` when a stage begins (so a crash or a hang is charged to the stage it
happened in) and one final `{"result": {...}}` per case. Everything else the case prints
(TVM, LLVM, warnings) goes to stderr, so stdout stays the protocol.

Stages, in order: load (build the model / read the files), export (torch.export; torch cases),
import (the Relax frontend), compile (tvm.compile), upload (remote devices only: the library
linked by the cross compiler, a fresh RPC session from the tracker, the library loaded there),
run (the VM), numerics (the comparison with the reference, computed here). A case that passes
them all is `ok`. Compile-only targets (CUDA without a GPU) end after assemble: each kernel
of the compiled module assembled by nvcc (ptxas) for each architecture asked; `ok` there means
compiled and assembled. A bundled case (`RunConfig.bundle`) ends after bundle (the library
and its calls written into its folder), `bundled`: it is judged where the device runs it.

`python worker.py gen-onnx-node DIR` writes ONNX's node conformance cases into DIR
(`casework.onnx_cases`); `python worker.py gen-opinfo DIR N` the first N samples of each op
of PyTorch's op_db in each dtype (`casework.opinfo`); `python worker.py list MODULE
[--path DIR]` prints a suite module's case names (`--path`: the packages of `--with`, after
the venv's own).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

try:  # imported as part of tvmfork (unit tests)
    from tvmfork.conformance.casework import case as casemod
    from tvmfork.conformance.casework import onnx_cases, opinfo
    from tvmfork.conformance.casework.backends import release_devices
    from tvmfork.conformance.casework.onnx_route import run_onnx
    from tvmfork.conformance.casework.spec import Message, RunConfig
    from tvmfork.conformance.casework.torch_route import load_module, run_torch
except ImportError:  # run as a script inside a TVM venv: `casework` is beside this file
    from casework import case as casemod  # type: ignore[no-redef,unused-ignore]
    from casework import onnx_cases, opinfo  # type: ignore[no-redef,unused-ignore]
    from casework.backends import release_devices  # type: ignore[no-redef,unused-ignore]
    from casework.onnx_route import run_onnx  # type: ignore[no-redef,unused-ignore]
    from casework.spec import Message, RunConfig  # type: ignore[no-redef,unused-ignore]
    from casework.torch_route import load_module, run_torch  # type: ignore[no-redef,unused-ignore]

send = casemod.send


def run_case(message: Message) -> dict[str, Any]:
    """One case, start to end: its result record (status, the stage it stopped in, the error,
    times and notes)."""
    case = casemod.Case(message.case, message.run)
    status, error = "ok", ""
    send({"stage": "load"})
    try:
        routes = {"torch": run_torch, "onnx": run_onnx, "opinfo": opinfo.run_opinfo}
        routes[case.spec.kind](case)
    except casemod.CompileOnly:
        pass
    except casemod.NotRun as exc:
        status, error = "not run", str(exc)
    except casemod.CaseFailed as exc:
        status, error = ("wrong" if case.stage == "numerics" else "error"), str(exc)
    except Exception as exc:
        stage = case.stage
        why = casemod.export_reason(exc) if stage == "export" else casemod.last_line(exc)
        status, error = "error", why
        traceback.print_exc(file=sys.stderr)
    if message.run.remote is not None:
        release_devices()
    if status == "ok" and case.written is not None:
        case.written.close(case.info)
        status = "bundled"  # judged on the device (`casework.bundle`)
    stage = status if status in ("ok", "bundled") else case.stage
    return {"status": status, "stage": stage, "error": error, **case.times, **case.info}


class Environment:
    """What the run configuration changes in this process, applied before each case and
    changed only when a case's configuration differs from the one before."""

    def __init__(self) -> None:
        self.threads: int | None = None

    def apply(self, run: RunConfig) -> None:
        if run.extra_path and run.extra_path not in sys.path:
            sys.path.append(run.extra_path)  # the packages of `--with`, after the venv's own
        if run.threads and run.threads != self.threads:
            import torch

            torch.set_num_threads(run.threads)
            self.threads = run.threads


def serve() -> int:
    import tvm

    send({"ready": True, "tvm": tvm.__version__, "tvm_file": str(Path(tvm.__file__).parent)})
    env = Environment()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = Message.from_json(json.loads(line))
        env.apply(message.run)
        send({"result": run_case(message)})
        sys.stderr.flush()
    return 0


def list_module(path: str, extra: str) -> int:
    """The suite module's case names; if it cannot be imported, why (`{"error": ...}`)."""
    if extra:
        sys.path.append(extra)
    try:
        names = sorted(load_module(path).CASES)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        send({"error": casemod.last_line(exc)})
        return 0
    send({"cases": names})
    return 0


def main(argv: list[str]) -> int:
    # The protocol keeps the real stdout; anything else printed goes to stderr.
    casemod.CHANNEL[0] = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if argv[:1] == ["gen-onnx-node"]:
        return onnx_cases.gen_onnx_node(Path(argv[1]))
    if argv[:1] == ["gen-opinfo"]:
        return opinfo.gen_opinfo(Path(argv[1]), int(argv[2]))
    if argv[:1] == ["list"]:
        extra = argv[3] if argv[2:3] == ["--path"] else ""
        return list_module(argv[1], extra)
    return serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
