"""`tvmfork conformance` from its typed options (`options.Options`): make both sides' venvs
(the fork's from `--wheel` where given), collect the cases (one shard of them with
`--shard`), run them with one run configuration, write the report naming each side's TVM and
wheel; or join shards' reports (`merge`). `cli.cmd_conformance` prints what this returns."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from tvmfork import conformance, git, hostcpu, sides, stock, ui, venvs
from tvmfork.conformance import bundles, devices, merge, remote, report, suites
from tvmfork.conformance.casework.spec import RunConfig
from tvmfork.conformance.options import Options
from tvmfork.conformance.runner import CaseSpec, Result
from tvmfork.errors import ProcessError, UsageError
from tvmfork.lock import Lock
from tvmfork.series import Series
from tvmfork.settings import Settings
from tvmfork.wheel import build


@dataclass
class Outcome:
    """What the run printed, and what blocks a release: regressions (ok on stock, not on the
    fork) and wrong results on the fork (a silent wrong number, whatever stock did)."""

    lines: list[str]
    regressions: list[report.Row]
    wrong: list[report.Row]


def emulated_devices(
    o: Options,
    settings: Settings,
    lock: Lock,
    series: Series,
    root: Path,
    stock_python: Path,
    logs: Path,
) -> devices.Devices:
    """`o.emulated` aarch64 devices (not started yet): the Debian arm64 root, the fork's
    aarch64 overlay wheel installed in it and imported there, and the tracker's packages."""
    assert o.emulated is not None
    devices.check_emulation()
    debian = devices.debian_root(settings.cache_dir)
    wanted = stock.select(lock, "linux_aarch64")[0]
    wheel = build.overlay_wheel(settings, lock, series, python_only=True, wanted=wanted)
    site = devices.install_wheel(debian, wheel.path, stock.sha256_of(wheel.path))
    ui.note(devices.check_root_tvm(debian, site, wheel.version))
    deps = venvs.deps_venv(settings, root)[0]
    tools = devices.rpc_tools(settings.cache_dir / "venvs", deps, settings.python)
    server = devices.root_python(debian, site)
    return devices.Devices(stock_python, tools, server, o.emulated, devices.EMULATED_KEY, logs)


def run(o: Options, settings: Settings, lock: Lock, series: Series, root: Path) -> Outcome:
    out = o.report or settings.out_dir / "conformance"
    if o.merge:
        header, results = merge.merge(o.merge)
        return _write(results, header, out, time.monotonic())
    if o.from_bundle is not None:
        header, results = bundles.read_back(o.from_bundle)
        return _write(results, header, out, time.monotonic())
    pair = sides.test_sides(
        settings, lock, series, root, stock_ffi=o.stock_ffi, against=o.against, fork_wheel=o.wheel
    )
    if not o.emulated:
        return _run(o, settings, root, pair, out)
    with ui.step(f"prepare {o.emulated} emulated aarch64 device(s)"):
        emulated = emulated_devices(o, settings, lock, series, root, pair.stock, out / "devices")
    ui.note(f"starting them (an emulated server imports TVM in seconds); logs in {emulated.logs}")
    with emulated:  # stopped when the run ends, however it ends
        ui.note(f"RPC tracker {emulated.tracker}, key {emulated.key}")
        o = dataclasses.replace(
            o, rpc_tracker=emulated.tracker, rpc_key=emulated.key, jobs=max(o.jobs, o.emulated)
        )
        return _run(o, settings, root, pair, out)


def _context(o: Options, config: RunConfig, timed: bool) -> str:
    context = f"target {o.target}, threads {o.threads or 'default'}"
    if timed:
        context += f", {hostcpu.describe()}"
    if config.remote is not None:
        context += (
            f", on devices of RPC tracker {config.remote.tracker} (key {config.remote.key}); "
            "correctness only, no timings"
        )
    if o.with_pkgs:
        context += f", with {' '.join(venvs.with_packages(o.with_pkgs))}"
    if config.assemble and o.bundle is not None:
        context += f", CUDA kernels assembled by nvcc for {','.join(config.assemble)}"
    elif config.assemble:
        archs = ",".join(config.assemble)
        context += f", compile-only: each CUDA kernel assembled by nvcc for {archs}, not run"
    if o.jobs > 1 and config.remote is None:
        context += f", {o.jobs} workers at once: timings compete"
    if o.shard is not None:
        context += f", shard {o.shard}"
    return context


def _run(o: Options, settings: Settings, root: Path, pair: sides.Sides, out: Path) -> Outcome:
    config = remote.resolve(o.target, o.rpc_tracker, o.rpc_key, o.cross_cc, o.cuda_archs)
    extra_reqs = venvs.with_packages(o.with_pkgs)
    extra_path = None
    if extra_reqs:
        with ui.step(f"packages for both sides: {' '.join(extra_reqs)}"):
            deps = venvs.deps_venv(settings, root)[0]
            extra_path = venvs.extras(
                settings.cache_dir / "venvs", deps, extra_reqs, python=settings.python
            )
    config = dataclasses.replace(
        config,
        threads=o.threads,
        extra_path=str(extra_path) if extra_path else "",
        bundle=str(o.bundle.folder) if o.bundle is not None else "",
    )
    if config.remote is not None:
        ui.note(remote.preflight(config.remote, pair.stock))
    timed = o.timed(remote=config.remote is not None, compile_only=bool(config.assemble))
    limits = suites.Limits(
        reps=o.reps if timed else 0,
        ort=o.ort and timed,
        inductor=o.inductor and timed,
        samples=o.samples,
    )
    if o.timeout:
        limits = dataclasses.replace(limits, node_timeout=o.timeout, model_timeout=o.timeout)
    what = ", ".join(o.suites + [str(p) for p in (*o.onnx, *o.torch_modules, *o.hf)])
    with ui.step(f"collect cases ({what})"):
        cases = suites.collect(
            o.suites,
            python=pair.stock,
            cache=settings.cache_dir / "conformance",
            limits=limits,
            patterns=o.patterns,
            onnx_paths=o.onnx,
            torch_modules=o.torch_modules,
            hf_dirs=o.hf,
            extra=extra_path,
        )
    if not cases:
        raise UsageError("no case matches: check the suite names and -k patterns")
    total = len(cases)
    chosen: list[CaseSpec] = cases
    if o.shard is not None:
        chosen = [cases[i] for i in o.shard.take(list(cases))]
        ui.note(f"shard {o.shard}: {len(chosen)} of the run's {total} cases")
    pythons = {side: {"stock": pair.stock, "fork": pair.fork}[side] for side in o.sides}
    wheels = pair.wheels()
    carried = (
        bundles.prepare(o.bundle, pythons, wheels, settings.cache_dir / "wheels")
        if o.bundle is not None
        else []
    )
    commit = _commit(root)  # the code that runs the cases, as it is when they start
    start = time.monotonic()
    ran = conformance.run(chosen, pythons, out, config, jobs=o.jobs) if chosen else None
    results = ran.results if ran is not None else []
    named: dict[str, dict[str, str]] = {}
    for side in o.sides:
        said = ran.imported.get(side, {}) if ran is not None else {}
        named[side] = {
            "tvm": str(said.get("tvm", "")),
            "tvm_file": str(said.get("tvm_file", "")),
            "wheel": wheels[side].name,
            "sha256": pair.sha256[side],
        }
    for r in results:  # each record names the TVM and the wheel it came from
        r.notes.update(tvm=named[r.side]["tvm"], wheel=named[r.side]["wheel"])
    header = report.Header(
        sides=named,
        context=_context(o, config, timed),
        config=config.to_json(),
        shard=str(o.shard) if o.shard is not None else "",
        cases=total,
        commit=commit,
        date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    if o.bundle is not None:
        device = "cuda" if config.assemble else "cpu"
        packed = bundles.pack(o.bundle, chosen, results, o.sides, carried, header, device)
        return _bundled(packed, start)
    return _write(results, header, out, start)


def _bundled(packed: bundles.Packed, start: float) -> Outcome:
    """What a bundle's build printed: its counts per suite and side, and the cases that stopped
    here on the fork where stock's went into the bundle. Those are judged with the device's
    results (`--from-bundle`): a regression if stock's runs right there, an improvement if
    stock's gives a wrong number (a clear error in place of a silent one)."""
    results = packed.results
    lines = [*report.summary(results), *packed.lines]
    pending = [
        row
        for row in report.rows(results)
        if row.stock is not None
        and row.fork is not None
        and row.stock.status == "bundled"
        and row.fork.status not in ("bundled", "not run")
    ]
    if pending:
        lines.append(
            f"{len(pending)} case(s) stopped here on the fork and went into the bundle on "
            "stock: the device's run decides (a regression if stock's is right there):"
        )
        for row in pending:
            assert row.fork is not None
            lines.append(
                f"  {row.suite}/{row.case}: fork {report.word(row.fork)}: {row.fork.error}"
            )
    lines.append(f"({time.monotonic() - start:.0f} s)")
    return Outcome(lines, [], [])


def _commit(root: Path) -> str:
    """tvmfork's own commit, as the report keys its measurements ("" outside a git clone;
    "+dirty" when the tree has changes)."""
    repo = git.Repo(root)
    try:
        return repo.head() + ("+dirty" if repo.dirty() else "")
    except ProcessError:
        return ""


def _write(results: list[Result], header: report.Header, out: Path, start: float) -> Outcome:
    jsonl, md = report.write(results, out, header=header)
    lines = [
        *header.lines(),
        *report.summary(results),
        *report.speed_table(results, header.context),
    ]
    lines.append(f"report: {md}\nresults: {jsonl}\n({time.monotonic() - start:.0f} s)")
    bad = report.regressions(results)
    for r in bad:
        assert r.stock is not None and r.fork is not None
        lines.append(f"REGRESSION {r.suite}/{r.case}: fork {report.word(r.fork)}: {r.fork.error}")
    wrong = report.fork_wrong(results)
    for r in wrong:
        assert r.fork is not None
        lines.append(f"WRONG on the fork {r.suite}/{r.case}: {r.fork.error}")
    return Outcome(lines, bad, wrong)
