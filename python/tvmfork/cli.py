"""The `tvmfork` command line. `main` is the only place that catches TvmforkError."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from tvmfork import lock as lockmod
from tvmfork import series as seriesmod
from tvmfork import settings, ui
from tvmfork.args import parser
from tvmfork.errors import PatchError, SourceError, TvmforkError, UsageError, VerifyError


def find_root(start: Path) -> Path:
    for d in [start, *start.parents]:
        if (d / "patches" / seriesmod.LOCK).is_file():
            return d
    raise UsageError(
        f"no tvmfork repository at or above {start} (looked for patches/{seriesmod.LOCK}); "
        "run inside the repository or pass --repo"
    )


class Ctx:
    def __init__(self, args: argparse.Namespace, overrides: dict[str, Any]) -> None:
        self.args = args
        self.root = find_root(Path(args.repo or Path.cwd()).resolve())
        self.settings = settings.load(self.root, overrides=overrides)
        self.patches_dir = self.root / "patches"

    def lock(self) -> lockmod.Lock:
        return lockmod.load(self.patches_dir / seriesmod.LOCK)

    def series(self) -> seriesmod.Series:
        return seriesmod.load(self.patches_dir)

    def checkout_dir(self) -> Path:
        return self.settings.resolved_checkout()


def require_checkout(ctx: Ctx) -> Path:
    """The TVM checkout, or a SourceError that says how to make one."""
    path = ctx.checkout_dir()
    if not (path / ".git").exists():
        raise SourceError(
            f"no TVM checkout at {path}; make one with `tvmfork checkout` (or `make "
            "checkout`), or point --checkout / checkout_dir at yours"
        )
    return path


def cmd_checkout(ctx: Ctx) -> int:
    from tvmfork.checkout import checkout

    a = ctx.args
    mode = "all" if a.all_submodules else "none" if a.no_submodules else "required"
    dest = ctx.checkout_dir()
    report = checkout(
        ctx.lock(),
        dest,
        ctx.settings.source,
        ctx.settings.submodules,
        submodules=mode,
        shallow=not a.full_history,
    )
    print(f"checkout at {dest}")
    for f in report:
        how = {
            "commit": "verified commit",
            "tree": "verified tree (plain folder)",
            "unverified": "UNVERIFIED (plain folder)",
        }[f.verified]
        print(f"  {f.path:40} {f.commit[:12]}  {how}  <- {f.source}")
    return 0


def cmd_apply(ctx: Ctx) -> int:
    from tvmfork.patchflow import apply

    res = apply(ctx.series(), require_checkout(ctx), force=ctx.args.force)
    if not res.unchanged:
        print(f"applied {len(res.applied)} patch(es); {ctx.checkout_dir()} is at {res.head[:12]}")
        for name in res.applied:
            print(f"  {name}")
    return 0


def cmd_export(ctx: Ctx) -> int:
    from tvmfork.patchflow import plan_export, write_export

    try:
        current = ctx.series()
    except PatchError:
        current = None
    plan = plan_export(ctx.patches_dir, require_checkout(ctx), current)
    if ctx.args.check:
        if plan.stale:
            print("patches/ is stale against the checkout:")
            for s in plan.stale:
                print(f"  {s}")
            return 1
        print(f"patches/ matches the checkout ({len(plan.order)} patch(es))")
        return 0
    write_export(ctx.patches_dir, plan)
    print(f"exported {len(plan.order)} patch(es) to {ctx.patches_dir}")
    for s in plan.stale:
        print(f"  {s}")
    return 0


def _cached_stock(ctx: Ctx) -> Path | None:
    from tvmfork import stock

    if ctx.settings.wheel.stock_wheel:
        return ctx.settings.wheel.stock_wheel
    try:
        wf = stock.pick(ctx.lock())
    except TvmforkError:
        return None
    path = ctx.settings.cache_dir / "wheels" / wf.filename
    return path if path.is_file() else None


def cmd_check(ctx: Ctx) -> int:
    from tvmfork import check

    checkout = ctx.checkout_dir()
    has_checkout = (checkout / ".git").exists()
    report = check.run(ctx.root, _cached_stock(ctx), checkout if has_checkout else None)
    if report.series:
        for p in report.series.patches:
            kind = "native" if p.native else "python"
            print(f"  {kind:6}  {p.name}  ({p.trailer('Upstream-Status')})")
    for n in report.notes:
        print(f"note: {n}")
    if report.problems:
        raise PatchError("the series is not sound:\n  " + "\n  ".join(report.problems))
    count = len(report.series.patches) if report.series else 0
    print(f"series ok: {count} patch(es)")
    return 0


def build_overlay(ctx: Ctx, python_only: bool) -> Any:
    from tvmfork import stock
    from tvmfork.wheel import overlay

    lock = ctx.lock()
    path, _ = stock.fetch(lock, ctx.settings.cache_dir, ctx.settings.wheel.stock_wheel)
    with ui.step(f"overlay wheel from {path.name}"):
        res = overlay.build(lock, ctx.series(), path, ctx.settings.out_dir, python_only)
    return res


def build_source(ctx: Ctx) -> int:
    from tvmfork.wheel import source

    res = source.SourceBuild(ctx.settings, ctx.lock(), ctx.series(), ctx.root).run()
    size = res.path.stat().st_size / 1e6
    print(f"built {res.path} ({size:.1f} MB) in {res.seconds['total']:.0f} s")
    print(f"  version {res.version}; mode source; variant {res.variant}")
    print(f"  included ({len(ctx.series().patches)}): all patches, native ones too")
    print("\n".join(source.describe(res)))
    return 0


def source_unavailable(ctx: Ctx) -> str | None:
    """Why a source build cannot run here (no checkout, no variant, a missing tool), or None."""
    from tvmfork.wheel import source

    try:
        source.SourceBuild(ctx.settings, ctx.lock(), ctx.series(), ctx.root).preflight()
    except TvmforkError as exc:
        return str(exc)
    return None


def cmd_wheel(ctx: Ctx) -> int:
    ws = ctx.settings.wheel
    series = ctx.series()
    native = [p.name for p in series.patches if p.native]
    mode = ws.mode
    if mode == "source":
        return build_source(ctx)
    python_only = ws.python_only
    if mode == "auto":
        why_not = source_unavailable(ctx) if native and not python_only else None
        if native and not python_only and why_not is None:
            ui.note(f"auto: the series has {len(native)} native patch(es): building from source")
            return build_source(ctx)
        if native and not python_only:
            ui.note(
                f"auto: cannot build from source ({why_not}), so this is an overlay wheel "
                f"WITHOUT the native patch(es): {', '.join(native)}"
            )
            python_only = True
        mode = "overlay"
    if ws.variant != "cpu":
        ui.note(
            f"note: an overlay wheel keeps the stock wheel's binaries (CUDA-enabled); "
            f"variant {ws.variant!r} only selects source builds"
        )
    start = time.monotonic()
    res = build_overlay(ctx, python_only)
    size = res.path.stat().st_size / 1e6
    print(f"built {res.path} ({size:.1f} MB) in {time.monotonic() - start:.1f} s")
    print(f"  version {res.version}; mode overlay")
    print(f"  included ({len(res.included)}): {', '.join(res.included) or 'none'}")
    if res.left_out:
        print(f"  LEFT OUT ({len(res.left_out)}, native): {', '.join(res.left_out)}")
    return 0


def cmd_labels(ctx: Ctx) -> int:
    """`<upstream commit> <series digest>`: the image labels scripts/docker-build.sh passes."""
    print(ctx.lock().commit, ctx.series().digest)
    return 0


def cmd_info(ctx: Ctx | None, args: argparse.Namespace) -> int:
    from tvmfork import info

    data = info.gather(args.python)
    print(json.dumps(data, indent=2, sort_keys=True) if args.json else info.render(data))
    return 0


def _test_venvs(ctx: Ctx, series: seriesmod.Series) -> tuple[Path, Path, set[str], dict[str, str]]:
    """The stock and fork venvs of `verify`, made or reused: (stock python, fork python,
    patches the fork wheel includes, patches whose fork side cannot run and why).

    With --against, the stock side is that release from PyPI and the fork side is an overlay
    of its wheel with the Python patches that still apply to it.
    """
    from tvmfork import manifest, stock, venvs

    a = ctx.args
    s = ctx.settings
    lock = ctx.lock()
    deps, reqs = _deps_venv(ctx)
    stock_only: dict[str, str] = {}
    against = getattr(a, "against", None)
    if against:
        base_wheel = stock.download(against, s.cache_dir / "wheels" / "against")
        ui.note(f"{base_wheel.name}: sha256 {stock.sha256_of(base_wheel)} (not in the lock)")
        chosen, stock_only = _applicable(series, base_wheel)
        with ui.step(f"overlay wheel from {base_wheel.name}"):
            res = overlay_build(ctx, series, base_wheel, chosen)
        fork_wheel, included = res.path, set(res.included)
        stock_reqs = [against, a.stock_ffi]
        stock_name = f"stock-{venvs.key(against, a.stock_ffi)}"
    else:
        stock_path, stock_wf = stock.fetch(lock, s.cache_dir, s.wheel.stock_wheel)
        if a.wheel:
            fork_wheel = Path(a.wheel).resolve()
            included = manifest.included_in(fork_wheel)  # a source wheel carries native ones
        else:
            res = build_overlay(ctx, python_only=True)
            fork_wheel, included = res.path, set(res.included)
        stock_reqs = [str(stock_path), a.stock_ffi]
        stock_name = f"stock-{stock_wf.sha256[:12]}"
    vroot = s.cache_dir / "venvs"
    venvs.ensure(deps, reqs, python=s.python)
    stock_py = venvs.ensure(vroot / stock_name, stock_reqs, python=s.python, deps_venv=deps)
    fork_py = venvs.ensure(
        vroot / ("fork-against" if against else "fork"),
        [str(fork_wheel)],
        python=s.python,
        deps_venv=deps,
        fingerprint=stock.sha256_of(fork_wheel),
    )
    return stock_py, fork_py, included, stock_only


def _deps_venv(ctx: Ctx) -> tuple[Path, list[str]]:
    """The shared venv of the packages both sides' tests need, and those packages
    (tests/requirements.txt)."""
    from tvmfork import venvs

    req_file = ctx.root / "tests" / "requirements.txt"
    reqs = venvs.requirements(req_file.read_text().splitlines())
    return ctx.settings.cache_dir / "venvs" / f"deps-{venvs.key(*reqs)}", reqs


def _applicable(series: seriesmod.Series, wheel: Path) -> tuple[list[Any], dict[str, str]]:
    """The Python patches that apply, in order, to another release's wheel; and why the
    others' fork side cannot run."""
    import zipfile

    from tvmfork.wheel.overlay import patched_files

    chosen: list[Any] = []
    skipped: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as zf:
        for p in series.patches:
            if p.native:
                skipped[p.name] = "native patch: needs a source build"
                continue
            try:
                patched_files(zf, [*chosen, p])
                chosen.append(p)
            except PatchError:
                skipped[p.name] = f"does not apply to {wheel.name}: rebase it (tvmfork roll)"
    return chosen, skipped


def overlay_build(ctx: Ctx, series: seriesmod.Series, wheel: Path, only: list[Any]) -> Any:
    from tvmfork.wheel import overlay

    out = ctx.settings.out_dir / "against"
    return overlay.build(ctx.lock(), series, wheel, out, only=only)


def cmd_verify(ctx: Ctx) -> int:
    from tvmfork import verify

    series = ctx.series()
    for name in ctx.args.patches:
        series.get(name)  # an unknown name stops here, before any venv is built
    stock_py, fork_py, included, stock_only = _test_venvs(ctx, series)
    rows = verify.verify(
        series,
        ctx.root,
        stock_py,
        fork_py,
        included,
        ctx.args.patches or None,
        stock_only,
        timeout=ctx.args.timeout,
    )
    print(verify.table(rows))
    bad = [r for r in rows if r.stock is not None and r.fork is not None and not r.ok]
    if ctx.args.against:
        # Against another release, a patch upstream made unnecessary is news, not a failure.
        bad = [r for r in bad if r.fork is not None and not r.fork.passed]
    if bad:
        for r in bad:
            print(
                f"\n--- {r.patch} on stock ({r.stock.word if r.stock else '-'}):\n"
                f"{r.stock.tail if r.stock else ''}\n--- on the fork "
                f"({r.fork.word if r.fork else '-'}):\n{r.fork.tail if r.fork else ''}"
            )
        raise VerifyError(f"{len(bad)} patch(es) not proven: {', '.join(r.patch for r in bad)}")
    return 0


def cmd_upstream_tests(ctx: Ctx) -> int:
    from tvmfork import upstream_tests
    from tvmfork.patchflow import series_applied

    series = ctx.series()
    for name in ctx.args.patches:
        series.get(name)
    checkout = require_checkout(ctx)
    if not series_applied(checkout, series):
        raise UsageError(
            f"{checkout} does not carry the series as it is in patches/; run "
            "`tvmfork apply` (or `tvmfork export` if the checkout is newer)"
        )
    files = upstream_tests.test_files(series, ctx.args.patches or None)
    for extra in ctx.args.also:
        if not (checkout / extra).exists():
            raise UsageError(f"--also {extra}: no such file or folder in {checkout}")
        files.append(extra)
    if not files:
        print("the series touches no upstream test files")
        return 0
    stock_py, fork_py, _, _ = _test_venvs(ctx, series)
    print(f"upstream test files ({len(files)}), run from {checkout}:")
    for f in files:
        print(f"  {f}")
    with ui.step("upstream tests on stock"):
        before = upstream_tests.run_side(stock_py, checkout, files)
    with ui.step("upstream tests on the fork"):
        after = upstream_tests.run_side(fork_py, checkout, files)
    result = upstream_tests.compare(before, after)
    print(upstream_tests.summary(result))
    if not after:
        raise VerifyError("the fork side produced no test results")
    bad = result.regressions + result.new_failing
    if bad:
        raise VerifyError(f"{len(bad)} upstream test(s) fail on the fork and not on stock")
    return 0


def cmd_conformance(ctx: Ctx) -> int:
    from tvmfork import conformance, venvs
    from tvmfork.conformance import report, suites

    a = ctx.args
    if a.threads is not None and a.threads < 1:
        raise UsageError(f"--threads {a.threads}: give a count of 1 or more")
    if a.report and (Path(a.report).suffix in (".md", ".jsonl") or Path(a.report).is_file()):
        folder = Path(a.report).parent
        raise UsageError(
            f"--report {a.report}: give a folder (report.md and results.jsonl go in it), "
            f"e.g. --report {folder}"
        )
    names = a.suites or ([] if a.onnx or a.torch_module or a.hf else ["ci"])
    for n in names:
        if n not in suites.SUITES:
            raise UsageError(f"unknown suite {n!r}; the suites: {', '.join(suites.SUITES)}")
    extra_reqs = venvs.with_packages(a.with_pkgs)
    hf_dirs = [suites.hf_dir(Path(d)) for d in a.hf]
    stock_py, fork_py, _, _ = _test_venvs(ctx, ctx.series())
    extra_path = None
    if extra_reqs:
        with ui.step(f"packages for both sides: {' '.join(extra_reqs)}"):
            vroot = ctx.settings.cache_dir / "venvs"
            extra_path = venvs.extras(
                vroot, _deps_venv(ctx)[0], extra_reqs, python=ctx.settings.python
            )
    limits = suites.Limits(reps=0 if a.no_bench else a.reps, ort=a.ort)
    if a.timeout:
        limits = dataclasses.replace(limits, node_timeout=a.timeout, model_timeout=a.timeout)
    with ui.step(f"collect cases ({', '.join(names + a.onnx + a.torch_module)})"):
        cases = suites.collect(
            names,
            python=stock_py,
            cache=ctx.settings.cache_dir / "conformance",
            limits=limits,
            patterns=a.k,
            onnx_paths=[Path(p) for p in a.onnx],
            torch_modules=[Path(m) for m in a.torch_module],
            hf_dirs=hf_dirs,
            extra=extra_path,
        )
    if not cases:
        raise UsageError("no case matches: check the suite names and -k patterns")
    sides = {"stock": stock_py, "fork": fork_py}
    if a.side != "both":
        sides = {a.side: sides[a.side]}
    out = Path(a.report).resolve() if a.report else ctx.settings.out_dir / "conformance"
    start = time.monotonic()
    results = conformance.run(
        cases, sides, out, a.target, parallel=a.side_jobs > 1, threads=a.threads, path=extra_path
    )
    context = f"target {a.target}, threads {a.threads or 'default'}"
    if extra_reqs:
        context += f", with {' '.join(extra_reqs)}"
    if a.side_jobs > 1:
        context += ", both sides at once: timings compete"
    jsonl, md = report.write(results, out, context)
    for line in report.summary(results):
        print(line)
    for line in report.speed_table(results, context):
        print(line)
    print(f"report: {md}\nresults: {jsonl}\n({time.monotonic() - start:.0f} s)")
    bad = report.regressions(results)
    for r in bad:
        assert r.stock is not None and r.fork is not None
        print(f"REGRESSION {r.suite}/{r.case}: fork {report.word(r.fork)}: {r.fork.error}")
    if bad:
        raise VerifyError(f"{len(bad)} case(s) work on stock and not on the fork")
    return 0


def cmd_envs(ctx: Ctx) -> int:
    start = time.monotonic()
    stock_py, fork_py, included, _ = _test_venvs(ctx, ctx.series())
    print(f"stock: {stock_py}\nfork:  {fork_py} ({len(included)} patch(es) included)")
    print(f"test venvs ready in {time.monotonic() - start:.0f} s")
    return 0


def cmd_stage(ctx: Ctx) -> int:
    from tvmfork import stage

    a = ctx.args
    s = ctx.settings

    series = ctx.series()
    series.get(a.patch)
    checkout = require_checkout(ctx)
    linters = stage.upstream_linters(s.cache_dir, s.python)
    bundle = stage.stage(series, a.patch, checkout, s.out_dir, a.onto, linters)
    print(f"branch {bundle.branch} at {bundle.head[:12]} in {checkout} (not pushed)")
    print(f"pull request bundle: {bundle.dir}")
    for name, file, result in bundle.checks:
        print(f"  {name:12} {file}: {result}")
    if not bundle.ok:
        raise VerifyError(
            "NOT READY: a check failed or did not run (see above and checks.txt); a skipped "
            "check proves nothing"
        )
    print("ready: every check ran and passed")
    return 0


def cmd_roll(ctx: Ctx) -> int:
    from tvmfork import roll

    a = ctx.args
    series = ctx.series()
    result = roll.roll(series, require_checkout(ctx), a.to, ctx.settings.source)
    print(f"rolling {len(series.patches)} patch(es) onto {a.to} ({result.base[:12]}):")
    for row in result.rows:
        print(f"  {row.status:18} {row.patch}")
        for f in row.files:
            print(f"      conflict in {f}")
        for h in row.hunks:
            print(f"      hunk {h}")
    if result.conflicts:
        raise PatchError(
            f"{len(result.conflicts)} patch(es) conflict with {a.to}; patches/ and the lock are "
            "unchanged. Resolve them in a checkout (tvmfork apply, git rebase --onto), then "
            "tvmfork export"
        )
    if a.dry_run:
        print("dry run: patches/ and the lock are unchanged")
        return 0
    roll.write(result, series, ctx.checkout_dir(), ctx.lock(), a.to)
    print(f"patches/ and {ctx.patches_dir / seriesmod.LOCK} now pin {a.to}")
    print(
        "note: the lock's stock wheel entries are unchanged: name the wheels (and sha256) of "
        "the new release there before building overlay wheels"
    )
    return 0


COMMANDS = {
    "checkout": cmd_checkout,
    "apply": cmd_apply,
    "export": cmd_export,
    "check": cmd_check,
    "labels": cmd_labels,
    "wheel": cmd_wheel,
    "verify": cmd_verify,
    "upstream-tests": cmd_upstream_tests,
    "conformance": cmd_conformance,
    "envs": cmd_envs,
    "stage": cmd_stage,
    "roll": cmd_roll,
}


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    o: dict[str, Any] = {}
    for key in ("checkout_dir", "source", "out_dir"):
        if getattr(args, key, None):
            o[key] = getattr(args, key)
    subs = getattr(args, "submodule", None)
    if subs:
        o["submodules"] = {}
        for item in subs:
            path, sep, src = item.partition("=")
            if not sep or not path or not src:
                raise UsageError(f"--submodule takes PATH=SOURCE, not {item!r}")
            o["submodules"][path.strip("/")] = src
    wheel = {
        k: getattr(args, k)
        for k in ("mode", "variant", "python_only", "stock_wheel")
        if getattr(args, k, None) is not None
    }
    if wheel:
        o["wheel"] = wheel
    build = {
        k: getattr(args, k)
        for k in ("jobs", "cuda_architectures", "llvm_config", "ccache")
        if getattr(args, k, None) is not None
    }
    if build:
        o["build"] = build
    return o


def main_inner(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    if args.command == "info":
        return cmd_info(None, args)
    ctx = Ctx(args, overrides_from(args))
    return COMMANDS[args.command](ctx)


def main(argv: list[str] | None = None) -> int:
    debug = "--debug" in (argv if argv is not None else sys.argv) or bool(
        os.environ.get("TVMFORK_DEBUG")
    )

    def terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # unwinds like Ctrl-C: builds stop their process group

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main_thread else None
    try:
        return main_inner(argv)
    except TvmforkError as exc:
        if debug:
            traceback.print_exc()
        print(f"tvmfork: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tvmfork: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`tvmfork info --json | head`): not an error of ours. Point
        # stdout at devnull so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
