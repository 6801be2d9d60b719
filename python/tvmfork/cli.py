"""The `tvmfork` command line: each `cmd_*` parses nothing itself (args.py does), calls the
module that owns the work and prints its result. `main` is the only place that catches
TvmforkError: it prints the message and exits with the error's code."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

from tvmfork import series as seriesmod
from tvmfork.args import parser
from tvmfork.context import Ctx, require_checkout, test_sides
from tvmfork.errors import PatchError, TvmforkError, UsageError, VerifyError

if TYPE_CHECKING:
    from tvmfork.series import Series
    from tvmfork.sides import Sides
    from tvmfork.verify import Row


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
        mirrors=ctx.settings.mirrors,
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

    current = seriesmod.load_or_none(ctx.patches_dir)
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


def cmd_check(ctx: Ctx) -> int:
    from tvmfork import check, stock

    checkout = ctx.checkout_dir()
    has_checkout = (checkout / ".git").exists()
    wheel = stock.cached(ctx.lock(), ctx.settings.cache_dir, ctx.settings.wheel.stock_wheel)
    report = check.run(ctx.root, wheel, checkout if has_checkout else None)
    if report.series:
        for p in report.series.patches:
            print(f"  {report.kinds[p.name]:6}  {p.name}  ({p.trailer('Upstream-Status')})")
    for n in report.notes:
        print(f"note: {n}")
    if report.problems:
        raise PatchError("the series is not sound:\n  " + "\n  ".join(report.problems))
    count = len(report.series.patches) if report.series else 0
    print(f"series ok: {count} patch(es)")
    return 0


def cmd_wheel(ctx: Ctx) -> int:
    from tvmfork.wheel import build

    print("\n".join(build.build(ctx.settings, ctx.lock(), ctx.series(), ctx.root)))
    return 0


def cmd_labels(ctx: Ctx) -> int:
    """`<upstream commit> <series digest>`: the image labels scripts/docker-build.sh passes."""
    print(ctx.lock().commit, ctx.series().digest)
    return 0


def cmd_info(ctx: Ctx) -> int:
    from tvmfork import info

    data = info.gather(ctx.args.python)
    print(json.dumps(data, indent=2, sort_keys=True) if ctx.args.json else info.render(data))
    return 0


def cmd_verify(ctx: Ctx) -> int:
    from tvmfork import verify

    series = ctx.series()
    for name in ctx.args.patches:
        series.get(name)  # an unknown name stops here, before any venv is built
    if ctx.args.find_deps and not ctx.args.alone:
        raise UsageError("--find-deps searches what --alone shows: add --alone")
    if ctx.args.alone and ctx.args.against:
        raise UsageError("--alone proves the series on its pin: leave out --against")
    sides = test_sides(ctx, series)
    if ctx.args.alone:
        return _verify_alone(ctx, series, sides)
    rows = verify.verify(
        series,
        ctx.root,
        sides.stock,
        sides.fork,
        sides.included,
        ctx.args.patches or None,
        sides.stock_only,
        timeout=ctx.args.timeout,
    )
    print(verify.table(rows))
    if ctx.args.table:
        _write_verify_table(ctx, series, sides, rows)
    bad = verify.unproven(rows, against=bool(ctx.args.against))
    if bad:
        print(verify.details(bad))
        raise VerifyError(f"{len(bad)} patch(es) not proven: {', '.join(r.patch for r in bad)}")
    return 0


def _write_verify_table(ctx: Ctx, series: Series, sides: Sides, rows: list[Row]) -> None:
    from tvmfork import verify

    against = ctx.args.against or f"the pin ({ctx.lock().tag})"
    command = "tvmfork verify"
    if ctx.args.against:
        command += f" --against {ctx.args.against} --stock-ffi {ctx.args.stock_ffi}"
    fork = "the series' Python patches that apply there, over that wheel"
    if not ctx.args.against:
        fork = "the fork wheel"
    lines = [
        f"Written by `{command} --table FILE` on {_today()}: each patch's regression tests "
        f"on stock `{sides.stock_wheel.name}` and on `{sides.fork_wheel.name}` ({fork}; "
        f"series digest `{series.digest[:10]}`).",
        "",
        "- *needed*: fails on stock, passes with the patch;",
        "- *needed, not in the overlay*: fails on stock; the patch does not apply there, or "
        "breaks an import (the reason follows): port it;",
        "- *absorbed*: passes on stock: upstream fixed it (retire the patch when the pin moves);",
        "- *broken on the release*: applies, but its tests fail with it: port it;",
        "- *unproven*: stock neither passes nor shows the bug (an error before the check).",
    ]
    _write_page(ctx.args.table, verify.markdown(rows, f"Patches still needed on {against}", lines))


def _today() -> str:
    import datetime

    return datetime.date.today().isoformat()


def _write_page(path: str, text: str) -> None:
    from pathlib import Path

    Path(path).write_text(text)
    print(f"wrote {path}")


def _verify_alone(ctx: Ctx, series: Series, sides: Sides) -> int:
    from tvmfork import alone, ui, verify

    done = 0

    def progress(job: verify.Job, outcome: verify.Outcome, seconds: float) -> None:
        nonlocal done
        done += 1
        ui.note(f"    [{done}] {job.key}: {outcome.word} ({seconds:.0f} s)")

    if ctx.args.find_deps:
        return _find_deps(ctx, series, sides, progress)
    rows = alone.verify_alone(
        series,
        ctx.root,
        sides.stock,
        sides.stock_wheel,
        ctx.settings.cache_dir / "alone",
        ctx.args.patches or None,
        timeout=ctx.args.timeout,
        on_done=progress,
    )
    print(alone.table(rows))
    if ctx.args.table:
        lines = [
            f"Written by `tvmfork verify --alone --table FILE` on {_today()}: each Python "
            f"patch's regression tests on the stock wheel's package (`{sides.stock_wheel.name}`)"
            " with only its Depends-On closure (stock itself where it names none), then with "
            f"the patch too; series digest `{series.digest[:10]}`.",
            "",
            "- *needed alone*: fails without the patch, passes with it;",
            "- *incomplete Depends-On*: it needs a patch it does not name (it does not apply "
            "on its closure, or its tests fail with it);",
            "- *cannot be shown*: a native patch, or one on a native patch (a source build).",
        ]
        _write_page(ctx.args.table, alone.markdown(rows, "Each patch needed alone", lines))
    bad = [r for r in rows if not r.ok]
    if bad:
        names = ", ".join(r.patch for r in bad)
        raise VerifyError(f"{len(bad)} patch(es) not shown needed alone: {names}")
    return 0


def _find_deps(ctx: Ctx, series: Series, sides: Sides, progress: Callable[..., None]) -> int:
    from tvmfork import finddeps, verify

    wanted = [
        p
        for p in verify.chosen(series, ctx.args.patches or None)
        if not series.needs_build(p) and verify.regression_tests(p)
    ]
    searches = finddeps.run(
        series,
        wanted,
        ctx.root,
        sides.stock,
        sides.stock_wheel,
        ctx.settings.cache_dir / "alone",
        timeout=ctx.args.timeout,
        on_done=progress,
        slots=ctx.args.jobs,
    )
    print("\n".join(finddeps.describe(searches)))
    missing = [s for s in searches if s.found or s.state != finddeps.DONE]
    if missing:
        raise VerifyError(
            f"{len(missing)} patch(es) need patches their Depends-On does not name, or fail "
            "on every earlier patch: " + ", ".join(s.patch.name for s in missing)
        )
    return 0


def cmd_upstream_tests(ctx: Ctx) -> int:
    from tvmfork import upstream_tests

    series = ctx.series()
    for name in ctx.args.patches:
        series.get(name)
    checkout = require_checkout(ctx)
    files = upstream_tests.files_to_run(series, checkout, ctx.args.patches, ctx.args.also)
    if not files:
        print("the series touches no upstream test files")
        return 0
    print(f"upstream test files ({len(files)}), run from {checkout}:")
    print("\n".join(f"  {f}" for f in files))
    sides = test_sides(ctx, series)
    print(upstream_tests.summary(upstream_tests.run(sides.stock, sides.fork, checkout, files)))
    return 0


def cmd_conformance(ctx: Ctx) -> int:
    from tvmfork.conformance import command, options

    opts = options.from_args(ctx.args)
    outcome = command.run(opts, ctx.settings, ctx.lock(), ctx.series(), ctx.root)
    print("\n".join(outcome.lines))
    problems = []
    if outcome.regressions:
        problems.append(f"{len(outcome.regressions)} case(s) work on stock and not on the fork")
    if outcome.wrong:
        problems.append(f"{len(outcome.wrong)} case(s) give a wrong result on the fork")
    if problems:
        raise VerifyError("; ".join(problems))
    return 0


def cmd_envs(ctx: Ctx) -> int:
    start = time.monotonic()
    sides = test_sides(ctx, ctx.series())
    print(f"stock: {sides.stock}\nfork:  {sides.fork} ({len(sides.included)} patch(es) included)")
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
    bundle = stage.stage(
        series, a.patch, checkout, s.out_dir, a.onto, linters, s.stage.author, s.stage.signoff
    )
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


def _roll_proven(ctx: Ctx, series: Series) -> int:
    from tvmfork import roll, rollprove

    a = ctx.args
    prover = rollprove.Prover(
        ctx.settings,
        ctx.lock(),
        series,
        ctx.root,
        require_checkout(ctx),
        a.stock_ffi,
        upstream=not a.no_upstream_tests,
        timeout=a.timeout,
    )
    proof = prover.prove(a.to)
    print("\n".join(rollprove.describe(proof)))
    if a.table:
        how = (
            f"Written by `tvmfork roll --to {a.to} --prove --table FILE` on {_today()}: each "
            "patch applied in order (plainly, else with a 3-way merge), then stock "
            f"`{proof.stock_wheel.name}` and the rolled series `{proof.fork_wheel.name}` built "
            "from source and tested: every patch's regression tests"
            + (", and the upstream test files the series touches" if proof.upstream else "")
            + f". Rounds: {proof.rounds} (an applied patch found absorbed is dropped and the "
            "rest rolled again)."
        )
        _write_page(a.table, rollprove.markdown(proof, [how]))
    rollprove.refuse(proof, series)
    if a.dry_run:
        print("dry run: patches/ and the lock are unchanged")
        return 0
    assert proof.result is not None
    roll.write(proof.result, series, ctx.checkout_dir(), ctx.lock(), a.to, frozenset(proof.dropped))
    print(f"patches/ and {ctx.patches_dir / seriesmod.LOCK} now pin {a.to}")
    return 0


def cmd_roll(ctx: Ctx) -> int:
    from tvmfork import roll

    a = ctx.args
    series = ctx.series()
    if a.prove:
        return _roll_proven(ctx, series)
    result = roll.roll(series, require_checkout(ctx), a.to, ctx.settings.source)
    print("\n".join(roll.describe(result, len(series.patches), a.to)))
    if a.table:
        how = (
            f"Written by `tvmfork roll --to {a.to} --dry-run --table FILE` on {_today()}: "
            "each patch applied in order, plainly where it applies as it is, else with a "
            "3-way merge. This is a textual apply: it says nothing of whether the merged code "
            "still works there."
        )
        _write_page(a.table, roll.markdown(result, a.to, [how]))
    roll.refuse_conflicts(result, a.to)
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


def cmd_status(ctx: Ctx) -> int:
    from tvmfork import status

    found = status.gather(ctx.series(), ctx.root, ctx.settings.out_dir)
    if not ctx.args.write:
        print(status.table(found))
        return 0
    path = ctx.root / "docs" / "status.md"
    path.write_text(status.page(found, ctx.root))
    print(f"wrote {path} ({len(found.rows)} patches; proofs: {len(found.proofs)} page(s))")
    return 0


COMMANDS: dict[str, Callable[[Ctx], int]] = {
    "info": cmd_info,
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
    "status": cmd_status,
}


def main_inner(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    return COMMANDS[args.command](Ctx(args))


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
