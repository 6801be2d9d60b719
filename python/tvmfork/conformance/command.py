"""`tvmfork conformance` from its options: check them, make both sides' venvs, collect the
cases, run them, write the report. `cli.cmd_conformance` prints what this returns."""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from tvmfork import conformance, hostcpu, sides, stock, ui, venvs
from tvmfork.conformance import devices, remote, report, suites
from tvmfork.conformance.runner import Result
from tvmfork.errors import UsageError
from tvmfork.lock import Lock
from tvmfork.series import Series
from tvmfork.settings import Settings
from tvmfork.wheel import build


@dataclass
class Outcome:
    lines: list[str]
    regressions: list[report.Row]


def check_options(a: argparse.Namespace) -> list[str]:
    """The suites to run; a usage error for a bad option, before anything is built."""
    if a.threads is not None and a.threads < 1:
        raise UsageError(f"--threads {a.threads}: give a count of 1 or more")
    if a.side_jobs < 1:
        raise UsageError(f"--jobs {a.side_jobs}: give a count of 1 or more")
    if a.report and (Path(a.report).suffix in (".md", ".jsonl") or Path(a.report).is_file()):
        folder = Path(a.report).parent
        raise UsageError(
            f"--report {a.report}: give a folder (report.md and results.jsonl go in it), "
            f"e.g. --report {folder}"
        )
    if a.emulated is not None:
        if a.emulated < 1:
            raise UsageError(f"--emulated {a.emulated}: give a count of 1 or more")
        if a.target != "aarch64" or a.rpc_tracker:
            raise UsageError("--emulated N runs --target aarch64, on a tracker of its own")
    names: list[str] = a.suites or ([] if a.onnx or a.torch_module or a.hf else ["ci"])
    suites.check_names(names)
    return names


def emulated_devices(
    a: argparse.Namespace,
    settings: Settings,
    lock: Lock,
    series: Series,
    root: Path,
    stock_python: Path,
    logs: Path,
) -> devices.Devices:
    """`a.emulated` aarch64 devices (not started yet): the Debian arm64 root, the fork's
    aarch64 overlay wheel installed in it and imported there, and the tracker's packages."""
    devices.check_emulation()
    debian = devices.debian_root(settings.cache_dir)
    wanted = stock.select(lock, "linux_aarch64")[0]
    wheel = build.overlay_wheel(settings, lock, series, python_only=True, wanted=wanted)
    site = devices.install_wheel(debian, wheel.path, stock.sha256_of(wheel.path))
    ui.note(devices.check_root_tvm(debian, site, wheel.version))
    deps = venvs.deps_venv(settings, root)[0]
    tools = devices.rpc_tools(settings.cache_dir / "venvs", deps, settings.python)
    server = devices.root_python(debian, site)
    return devices.Devices(stock_python, tools, server, a.emulated, devices.EMULATED_KEY, logs)


def run(
    a: argparse.Namespace, settings: Settings, lock: Lock, series: Series, root: Path
) -> Outcome:
    names = check_options(a)
    pair = sides.test_sides(settings, lock, series, root, stock_ffi=a.stock_ffi)
    out = Path(a.report).resolve() if a.report else settings.out_dir / "conformance"
    if not a.emulated:
        return _run(a, settings, root, names, pair, out)
    with ui.step(f"prepare {a.emulated} emulated aarch64 device(s)"):
        emulated = emulated_devices(a, settings, lock, series, root, pair.stock, out / "devices")
    ui.note(f"starting them (an emulated server imports TVM in seconds); logs in {emulated.logs}")
    with emulated:  # stopped when the run ends, however it ends
        ui.note(f"RPC tracker {emulated.tracker}, key {emulated.key}")
        device = {"rpc_tracker": emulated.tracker, "rpc_key": emulated.key}
        jobs = max(a.side_jobs, a.emulated)
        a = argparse.Namespace(**{**vars(a), **device, "side_jobs": jobs})
        return _run(a, settings, root, names, pair, out)


def _run(
    a: argparse.Namespace,
    settings: Settings,
    root: Path,
    names: list[str],
    pair: sides.Sides,
    out: Path,
) -> Outcome:
    target, device = remote.resolve(a.target, a.rpc_tracker, a.rpc_key, a.cross_cc)
    archs = ""
    if a.target == "cuda":  # compile-only
        if device is not None:
            raise UsageError("--target cuda is compile-only here: no --rpc-tracker")
        target, archs = remote.cuda_target(a.cuda_archs), a.cuda_archs
    extra_reqs = venvs.with_packages(a.with_pkgs)
    hf_dirs = [suites.hf_dir(Path(d)) for d in a.hf]
    extra_path = None
    if extra_reqs:
        with ui.step(f"packages for both sides: {' '.join(extra_reqs)}"):
            deps = venvs.deps_venv(settings, root)[0]
            extra_path = venvs.extras(
                settings.cache_dir / "venvs", deps, extra_reqs, python=settings.python
            )
    if device is not None:
        ui.note(remote.preflight(device, pair.stock))
    timed = not (a.no_bench or device or archs)  # a remote device's times are not measured
    limits = suites.Limits(
        reps=a.reps if timed else 0, ort=a.ort and timed, inductor=a.inductor and timed
    )
    if a.timeout:
        limits = dataclasses.replace(limits, node_timeout=a.timeout, model_timeout=a.timeout)
    with ui.step(f"collect cases ({', '.join(names + a.onnx + a.torch_module)})"):
        cases = suites.collect(
            names,
            python=pair.stock,
            cache=settings.cache_dir / "conformance",
            limits=limits,
            patterns=suites.globs(a.k),
            onnx_paths=[Path(p) for p in a.onnx],
            torch_modules=[Path(m) for m in a.torch_module],
            hf_dirs=hf_dirs,
            extra=extra_path,
        )
    if not cases:
        raise UsageError("no case matches: check the suite names and -k patterns")
    pythons = {"stock": pair.stock, "fork": pair.fork}
    if a.side != "both":
        pythons = {a.side: pythons[a.side]}
    start = time.monotonic()
    results: list[Result] = conformance.run(
        cases,
        pythons,
        out,
        target,
        jobs=a.side_jobs,
        threads=a.threads,
        path=extra_path,
        remote=device,
        assemble=archs,
    )
    context = f"target {a.target}, threads {a.threads or 'default'}"
    if timed:
        context += f", {hostcpu.describe()}"
    if device is not None:
        context += (
            f", on devices of RPC tracker {device.tracker} (key {device.key}); correctness "
            "only, no timings"
        )
    if extra_reqs:
        context += f", with {' '.join(extra_reqs)}"
    if archs:
        context += f", compile-only: each CUDA kernel assembled by nvcc for {archs}, not run"
    if a.side_jobs > 1 and device is None:
        context += f", {a.side_jobs} workers at once: timings compete"
    jsonl, md = report.write(results, out, context)
    lines = [*report.summary(results), *report.speed_table(results, context)]
    lines.append(f"report: {md}\nresults: {jsonl}\n({time.monotonic() - start:.0f} s)")
    bad = report.regressions(results)
    for r in bad:
        assert r.stock is not None and r.fork is not None
        lines.append(f"REGRESSION {r.suite}/{r.case}: fork {report.word(r.fork)}: {r.fork.error}")
    return Outcome(lines, bad)
