"""Runs a conformance bundle on the device it was carried to: `python run.py [--out DIR]`.

This file is the bundle's `run.py` (`tvmfork conformance ... --bundle DIR` copies it there,
with `casework/` beside it). It needs Python (the version the bundle was made for) and numpy;
everything else comes in the bundle: each side's TVM without its compiler (runtime/SIDE.zip)
and the wheels that TVM imports (wheels/). It unpacks them into OUT/env, then runs each
side's cases in a process of that side (`--serve SIDE`), one case at a time: each case's
library loaded by TVM's runtime alone, each call's outputs judged here by the same code the
lane judges with (`casework.judge`), against the references computed where the bundle was
made. A case that crashes or hangs its process is charged to that case alone and the process
replaced.

OUT (default: DIR/device) gets results.jsonl (a record per case and side), a copy of the
bundle's manifest.json and build.jsonl (so OUT alone is the whole record), and each side's
log. `tvmfork conformance --from-bundle OUT` turns it into the usual stock-vs-fork report.
Standard library only at import: the serving process imports numpy and TVM.
"""

from __future__ import annotations

import argparse
import ctypes
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # casework/

from casework import bundle as bundlefile  # noqa: E402
from casework import pipe  # noqa: E402
from casework.compare import leaves  # noqa: E402
from casework.judge import Check, generation_verdict, greedy, verdict  # noqa: E402

START_TIMEOUT = 300.0


CHANNEL: list[Any] = [sys.stdout]  # the protocol's stream (the serving process's real stdout)


def send(obj: dict[str, Any]) -> None:
    CHANNEL[0].write(json.dumps(obj) + "\n")
    CHANNEL[0].flush()


# ---- the serving process: one side's TVM ------------------------------------------------


def load_cuda_runtime(kernels: dict[str, Path]) -> None:
    """TVM's CUDA runtime library, which runtime-only TVM does not load itself (with the
    CUDA runtime it links, from an installed PyTorch's nvidia packages where the system has
    none), and the compile callback that hands TVM the kernels assembled where the bundle was
    made, by the digest of the source the library carries, in place of compiling it here."""
    import tvm
    import tvm_ffi

    lib = Path(tvm.__file__).parent / "lib" / "libtvm_runtime_cuda.so"
    try:
        ctypes.CDLL(str(lib), mode=ctypes.RTLD_LOCAL)
    except OSError:
        for base in map(Path, sys.path):
            for cudart in sorted(base.glob("nvidia/*/lib/libcudart.so.*")) + sorted(
                base.glob("nvidia/cuda_runtime/lib/libcudart.so.*")
            ):
                ctypes.CDLL(str(cudart), mode=ctypes.RTLD_GLOBAL)
        ctypes.CDLL(str(lib), mode=ctypes.RTLD_LOCAL)

    def compile_cuda(source: Any) -> bytes:
        key = bundlefile.source_digest(str(source))
        if key not in kernels:
            raise RuntimeError(
                f"the bundle has no kernels for this CUDA source (sha256 {key[:12]}): "
                "it was not made for this library"
            )
        return kernels[key].read_bytes()

    tvm_ffi.register_global_func("tvm_callback_cuda_compile", compile_cuda, override=True)


def run_case(folder: Path, device_kind: str) -> dict[str, Any]:
    import tvm
    from casework.backends import Compiled
    from tvm.runtime.vm import VirtualMachine

    stage, record = "load", {}
    try:
        t = time.perf_counter()
        kernels = {p.stem: p for p in (folder / bundlefile.KERNELS).glob("*.fatbin")}
        if device_kind == "cuda":  # the device API and the kernels, even where there are none
            load_cuda_runtime(kernels)
        calls = bundlefile.read(folder)
        lib = tvm.runtime.load_module(str(folder / bundlefile.LIBRARY))
        device = tvm.cuda(0) if device_kind == "cuda" else tvm.cpu()
        vm = Compiled(VirtualMachine(lib, device), device)
        record["load_s"] = time.perf_counter() - t
        for call in calls:
            stage = "run"
            send({"stage": stage})
            if isinstance(call, Check):
                args = [vm.tensor(a) for a in call.args]
                t = time.perf_counter()
                got = leaves(vm(*args))
                record.setdefault("first_run_ms", (time.perf_counter() - t) * 1e3)
                stage = "numerics"
                problem, info = verdict(got, call)
                if "rel_err" in info:
                    info["rel_err"] = max(info["rel_err"], record.get("rel_err", 0.0))
                record.update(info)
            else:
                got_tokens = greedy(vm, call)
                stage = "numerics"
                record["tokens"] = call.count
                problem = generation_verdict(got_tokens, call)
            if problem:
                status = "wrong"
                return {"status": status, "stage": stage, "error": problem, **record}
    except Exception as exc:  # the case's error, reported: the next case goes on
        import traceback

        from casework.case import last_line

        traceback.print_exc(file=sys.stderr)
        return {"status": "error", "stage": stage, "error": last_line(exc), **record}
    return {"status": "ok", "stage": "ok", "error": "", **record}


def serve(device_kind: str) -> int:
    CHANNEL[0] = os.fdopen(os.dup(1), "w")  # the protocol keeps the real stdout
    os.dup2(2, 1)  # and everything TVM prints goes to the log
    sys.stdout = sys.stderr
    import tvm

    # stock's runtime-only TVM loads libtvm_runtime alone (the fork's loads the rest too:
    # patch load-the-runtime-libraries-in-a-runtime-only-tvm); what a compiled module may
    # call besides (contrib sort, random) is in libtvm_runtime_extra, loaded here as `import
    # tvm` loads it with the compiler, for its registrations (loading it twice is harmless)
    extra = Path(tvm.__file__).parent / "lib" / "libtvm_runtime_extra.so"
    if extra.is_file():
        ctypes.CDLL(str(extra), mode=ctypes.RTLD_LOCAL)

    send({"ready": True, "tvm": tvm.__version__, "tvm_file": str(Path(tvm.__file__).parent)})
    for line in sys.stdin:
        if line.strip():
            send({"result": run_case(Path(line.strip()), device_kind)})
    return 0


# ---- the parent: unpacks, runs each side, writes the results ---------------------------


def unpack(manifest: dict[str, Any], env: Path) -> dict[str, list[Path]]:
    """Each side's import path: its TVM without the compiler, then the bundle's wheels (each
    case's zip is unpacked under `env/cases` as it comes)."""
    common = env / "common"
    stamp = env / ".unpacked"
    if not stamp.exists():
        shutil.rmtree(env, ignore_errors=True)
        common.mkdir(parents=True)
        for wheel in sorted((HERE / "wheels").glob("*.whl")):
            with zipfile.ZipFile(wheel) as z:
                z.extractall(common)
        for side in manifest["sides"]:
            with zipfile.ZipFile(HERE / "runtime" / f"{side}.zip") as z:
                z.extractall(env / side)
        stamp.write_text("ok\n")
    return {side: [env / side, common] for side in manifest["sides"]}


class Side:
    """A serving process of one side, replaced when a case crashes or hangs it."""

    def __init__(self, side: str, path: list[Path], device_kind: str, log: Path) -> None:
        self.side, self.path, self.device_kind, self.log_path = side, path, device_kind, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.buf = bytearray()
        self.ready: dict[str, Any] = {}

    def start(self) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(str(p) for p in self.path),
            "PYTHONDONTWRITEBYTECODE": "1",
            "TVM_USE_RUNTIME_LIB": "1",  # the bundle's TVM has no compiler: say so up front
        }
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-u", str(HERE / "run.py"), "--serve", self.device_kind],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                start_new_session=True,
            )
        self.buf = bytearray()
        line = self.read(time.monotonic() + START_TIMEOUT)
        self.ready = json.loads(line) if line else {}
        if not self.ready.get("ready"):
            self.stop()
            tail = self.log_path.read_text(errors="replace").strip().splitlines()[-1:]
            raise SystemExit(
                f"the {self.side} side's TVM did not start: {' '.join(tail)} (log: {self.log_path})"
            )

    def read(self, deadline: float) -> bytes | None:
        assert self.proc is not None
        line: bytes | None = pipe.read_line(self.proc, self.buf, deadline)
        return line

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        code: int = pipe.stop(self.proc)
        self.proc = None
        return code

    def run(self, folder: Path, timeout: float) -> dict[str, Any]:
        if self.proc is None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(f"{folder}\n".encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        deadline = time.monotonic() + timeout
        stage = "load"
        while True:
            line = self.read(deadline)
            if line is None:
                hung = self.proc.poll() is None
                code = self.stop()
                if hung:
                    return {"status": "timeout", "stage": stage, "error": f"{timeout:.0f} s"}
                return {"status": "crash", "stage": stage, "error": f"exit {code}"}
            msg = json.loads(line)
            if "stage" in msg:
                stage = msg["stage"]
            elif "result" in msg:
                return dict(msg["result"])


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        return serve(argv[1])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="where the results go (default: the bundle's device/)")
    p.add_argument("-k", default="", help="only cases whose SUITE/CASE matches a GLOB[,GLOB]")
    p.add_argument("--timeout", type=float, default=0, help="seconds a case (default: its own)")
    a = p.parse_args(argv)
    manifest = json.loads((HERE / "manifest.json").read_text())
    want = tuple(manifest["python"].split("."))
    if tuple(str(v) for v in sys.version_info[:2]) != want:
        print(
            f"this bundle's wheels are for Python {manifest['python']}, and this is "
            f"{sys.version_info[0]}.{sys.version_info[1]}: run it with python{manifest['python']}",
            file=sys.stderr,
        )
        return 2
    out = Path(a.out) if a.out else HERE / "device"
    out.mkdir(parents=True, exist_ok=True)
    for name in ("manifest.json", "build.jsonl"):
        shutil.copyfile(HERE / name, out / name)
    paths = unpack(manifest, out / "env")
    kind = manifest["device"]
    globs = [g for g in a.k.split(",") if g]
    cases = [
        c
        for c in manifest["cases"]
        if not globs or any(fnmatch.fnmatch(f"{c['suite']}/{c['case']}", g) for g in globs)
    ]
    sides = {s: Side(s, paths[s], kind, out / f"{s}.log") for s in manifest["sides"]}
    results = out / "results.jsonl"
    start = time.monotonic()
    counts: dict[str, dict[str, int]] = {s: {} for s in sides}
    with results.open("w") as fh:
        for i, c in enumerate(cases):
            parts = []
            for side, folder in c["folders"].items():
                where = out / "env" / folder.removesuffix(".zip")
                if not where.is_dir():
                    with zipfile.ZipFile(HERE / folder) as z:
                        z.extractall(where)
                r = sides[side].run(where, a.timeout or c["timeout"])
                r = {**r, "suite": c["suite"], "case": c["case"], "side": side}
                r["tvm"] = sides[side].ready.get("tvm", "")
                r["tvm_file"] = sides[side].ready.get("tvm_file", "")
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                counts[side][r["status"]] = counts[side].get(r["status"], 0) + 1
                parts.append(f"{side} {r['status']}")
            print(f"[{i + 1}/{len(cases)}] {c['suite']}/{c['case']}: {' | '.join(parts)}")
    for s in sides.values():
        s.stop()
    for side, c in counts.items():
        print(f"{side}: " + ", ".join(f"{n} {status}" for status, n in sorted(c.items())))
    print(f"results: {results} ({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
