"""`tvmfork roll --to REV --prove`: the textual roll, then proof on REV.

A textual apply cannot see a patch that merges and no longer works (upstream changed the code
around it) nor one upstream made unnecessary. So the roll is built and tested: stock REV and
the rolled series, each a source build (`rollbuild`), then every patch's regression tests
(`verify`) and the upstream test files the series touches (`upstream_tests`), stock REV
against the rolled build. Each patch reads:

- *clean* / *merged with 3-way*: applies, fails on stock REV and passes rolled;
- *absorbed*: its regression tests pass on stock REV (upstream fixed it; dropped on write);
- *BROKEN after the roll*: applies, and its tests (regression, or the upstream tests it adds or
  changes) fail on the rolled build;
- *CONFLICT*: does not apply, and stock REV still fails its tests;
- *UNPROVEN*: stock REV neither passes nor shows the bug (an error before the check).

An absorbed patch that was applied is dropped and the rest rolled, built and tested again, so
what is written is the series that was proven. `patches/` and the lock change only when every
patch is clean, merged with 3-way or absorbed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import pages, roll, rollbuild, ui, upstream_tests, verify
from tvmfork.errors import PatchError
from tvmfork.lock import Lock
from tvmfork.series import Patch, Series, classify
from tvmfork.settings import Settings

ABSORBED, BROKEN, UNPROVEN = "absorbed", "BROKEN after the roll", "UNPROVEN"
KINDS = (roll.CLEAN, roll.THREE_WAY, ABSORBED, BROKEN, roll.CONFLICT, UNPROVEN)
WRITABLE = (roll.CLEAN, roll.THREE_WAY, ABSORBED)


@dataclass
class Proven:
    patch: str
    text: str  # the textual roll's status
    verdict: str
    why: str = ""
    upstream: list[str] = field(default_factory=list)  # its upstream tests that fail rolled


@dataclass
class Proof:
    rev: str
    base: str
    rows: list[Proven]
    stock_wheel: Path
    fork_wheel: Path
    rounds: int
    upstream: upstream_tests.Comparison | None = None
    unattributed: list[str] = field(default_factory=list)
    result: roll.RollResult | None = None  # the last round's textual roll

    @property
    def blocking(self) -> list[Proven]:
        return [r for r in self.rows if r.verdict not in WRITABLE]

    @property
    def dropped(self) -> list[str]:
        return [r.patch for r in self.rows if r.verdict == ABSORBED]


class Results:
    """Each patch's regression-test outcome on one wheel, kept under `root/<wheel sha12>/`, so
    a proof stopped during its tests, or run again with another rolled build, reruns only what
    it has not seen (stock REV's side is the same wheel every round). The key holds the
    patch's name, its Regression-Test entries and `TestFiles`' digest of what they run: a
    changed test reruns. A timeout or a test server that died is not kept."""

    def __init__(self, root: Path, wheel_sha: str, files: TestFiles) -> None:
        self.dir = root / wheel_sha[:12]
        self.files = files

    def _path(self, patch: Patch) -> Path:
        h = hashlib.sha256(patch.name.encode())
        for t in verify.regression_tests(patch):
            h.update(b"\0" + t.encode())
        h.update(b"\0" + self.files.digest(patch).encode())
        return self.dir / f"{patch.name.removesuffix('.patch')}-{h.hexdigest()[:12]}.json"

    def get(self, patch: Patch) -> verify.Outcome | None:
        try:
            d = json.loads(self._path(patch).read_text())
        except (OSError, ValueError):
            return None
        tests = tuple(verify.TestResult(**t) for t in d["tests"])
        return verify.Outcome(d["status"], tests, d["tail"], d["detail"])

    def put(self, patch: Patch, outcome: verify.Outcome) -> None:
        if outcome.status == verify.TIMEOUT or outcome.detail.startswith("the test server"):
            return
        path = self._path(patch)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        tmp.write_text(json.dumps(dataclasses.asdict(outcome)))
        tmp.replace(path)


class TestFiles:
    """The content a patch's regression tests run: the test files its Regression-Test entries
    name, and the repository's helper modules under tests/ (every .py not named test_*), so a
    docstring edited in one module reruns only the patches whose tests are there."""

    def __init__(self, repo_root: Path) -> None:
        self.root = repo_root
        h = hashlib.sha256()
        for f in sorted((repo_root / "tests").rglob("*.py")):
            if not f.name.startswith("test_"):
                h.update(str(f.relative_to(repo_root)).encode() + b"\0" + f.read_bytes() + b"\0")
        self.helpers = h.hexdigest()

    def digest(self, patch: Patch) -> str:
        h = hashlib.sha256(self.helpers.encode())
        files = sorted({t.split("::", 1)[0] for t in verify.regression_tests(patch)})
        for name in files:
            path = self.root / name
            h.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-"))
        return h.hexdigest()


def regression_rows(
    series: Series,
    included: set[str],
    jobs_for: Callable[[list[verify.Job]], dict[str, verify.Outcome]],
    stock: tuple[Path, Results],
    fork: tuple[Path, Results],
    not_applied: str = "does not apply on REV",
) -> list[verify.Row]:
    """Every patch's regression tests on stock REV and (where it applied) the rolled build,
    taking what `Results` already holds and running the rest in one batch (`jobs_for`)."""
    have: dict[str, verify.Outcome] = {}
    jobs: list[verify.Job] = []
    owners: dict[str, tuple[Patch, Results]] = {}
    for p in series.patches:
        tests = tuple(verify.regression_tests(p))
        if not tests:
            continue
        sides = [("stock", stock)] + ([("fork", fork)] if p.name in included else [])
        for side, (python, results) in sides:
            key = f"{p.name}/{side}"
            got = results.get(p)
            if got is not None:
                have[key] = got
            else:
                jobs.append(verify.Job(key, python, tests))
                owners[key] = (p, results)
    if jobs:
        ran = jobs_for(jobs)
        for key, outcome in ran.items():
            patch, results = owners[key]
            results.put(patch, outcome)
        have.update(ran)
    rows = []
    for p in series.patches:
        tests = tuple(verify.regression_tests(p))
        if not tests:
            rows.append(verify.Row(p.name, tests, None, None, "no Regression-Test"))
            continue
        s, f = have.get(f"{p.name}/stock"), have.get(f"{p.name}/fork")
        rows.append(verify.Row(p.name, tests, s, f, "" if p.name in included else not_applied))
    return rows


_TEST_DEF = re.compile(r"^[+ -]?\s*(?:async\s+)?def (test_\w+)", re.M)
_HUNK_DEF = re.compile(r"^@@ [^@]* @@.*?\bdef (test_\w+)", re.M)


def touched_tests(patch: Patch) -> set[str]:
    """The upstream test functions a patch adds or changes: `def test_*` on a changed line of
    a test file, or named by a changed hunk's header."""
    names: set[str] = set()
    current = ""
    for chunk in re.split(r"(?m)^(?=diff --git )", patch.data.decode("utf-8", "replace")):
        m = re.match(r"diff --git a/\S+ b/(\S+)", chunk)
        if not m:
            continue
        current = m.group(1)
        if classify(current) != "test":
            continue
        names.update(n for n in re.findall(r"(?m)^\+\s*(?:async\s+)?def (test_\w+)", chunk))
        names.update(_HUNK_DEF.findall(chunk))
    return names


def _function(test_id: str) -> str:
    return test_id.rsplit("::", 1)[-1].split("[", 1)[0]


def decide(text: str, row: verify.Row | None, upstream_bad: list[str]) -> tuple[str, str]:
    """A patch's verdict and why, from its textual status, its regression tests' row (stock
    REV against the rolled build) and its upstream tests that fail rolled."""
    if text == roll.UPSTREAM:
        return ABSORBED, "git am found nothing left to apply"
    if row is None or row.stock is None:
        return UNPROVEN, row.reason if row else "no regression test ran"
    if row.stock.passed:
        return ABSORBED, "its regression tests pass on stock REV"
    if text == roll.CONFLICT:
        return roll.CONFLICT, f"stock REV: {row.stock.word}"
    if row.fork is None:
        return UNPROVEN, f"rolled build not run: {row.reason}"
    if not row.fork.passed:
        return BROKEN, f"regression tests on the rolled build: {row.fork.word}"
    if upstream_bad:
        return BROKEN, f"{len(upstream_bad)} upstream test(s) it adds or changes fail rolled"
    if not row.stock.failed:
        return UNPROVEN, f"stock REV: {row.stock.word}"
    return text, ""


def judge(
    series: Series,
    result: roll.RollResult,
    rows: list[verify.Row],
    comparison: upstream_tests.Comparison | None,
) -> tuple[list[Proven], list[str]]:
    """Each patch's verdict, and the failing upstream tests no patch adds or changes."""
    by_patch = {r.patch: r for r in rows}
    bad = (comparison.regressions + comparison.new_failing) if comparison else []
    owners: dict[str, list[str]] = {}
    unattributed = []
    touched = {p.name: touched_tests(p) for p in series.patches}
    for test in bad:
        fn = _function(test.split(" (", 1)[0])
        who = [name for name, fns in touched.items() if fn in fns]
        for name in who:
            owners.setdefault(name, []).append(test)
        if not who:
            unattributed.append(test)
    out = []
    for t in result.rows:
        verdict, why = decide(t.status, by_patch.get(t.patch), owners.get(t.patch, []))
        out.append(Proven(t.patch, t.status, verdict, why, owners.get(t.patch, [])))
    return out, unattributed


@dataclass
class Prover:
    settings: Settings
    lock: Lock
    series: Series
    root: Path
    checkout: Path
    stock_ffi: str
    upstream: bool = True
    timeout: float = verify.DEFAULT_TIMEOUT

    def wheels(self, result: roll.RollResult) -> tuple[Path, Path]:
        applied = [r.patch for r in result.rows if r.status in (roll.CLEAN, roll.THREE_WAY)]
        with ui.step(f"source build of stock {result.base[:12]}"):
            stock = rollbuild.build(
                self.settings, self.lock, self.series, self.root, self.checkout, result.base, set()
            )
        head = result.head or result.base
        with ui.step(f"source build of the rolled series ({len(applied)} patches, {head[:12]})"):
            fork = rollbuild.build(
                self.settings, self.lock, self.series, self.root, self.checkout, head, set(applied)
            )
        return stock, fork

    def test(
        self, series: Series, result: roll.RollResult, stock_wheel: Path, fork_wheel: Path
    ) -> tuple[list[verify.Row], upstream_tests.Comparison | None]:
        from tvmfork import sides

        s = sides.test_sides(
            self.settings,
            self.lock,
            series,
            self.root,
            stock_ffi=self.stock_ffi,
            against=str(stock_wheel),
            fork_wheel=fork_wheel,
        )
        ran_files = TestFiles(self.root)
        results = rollbuild.root_of(self.settings) / "results"
        done = 0

        def jobs_for(jobs: list[verify.Job]) -> dict[str, verify.Outcome]:
            def progress(job: verify.Job, outcome: verify.Outcome, seconds: float) -> None:
                nonlocal done
                done += 1
                ui.note(f"    [{done}/{len(jobs)}] {job.key}: {outcome.word} ({seconds:.0f} s)")

            with ui.step(f"regression tests: {len(jobs)} run(s) not already on record"):
                env = {"PYTHONDONTWRITEBYTECODE": "1"}
                return verify.run_jobs(jobs, self.root, env, self.timeout, on_done=progress)

        rows = regression_rows(
            series,
            s.included,
            jobs_for,
            (s.stock, Results(results, s.sha256["stock"], ran_files)),
            (s.fork, Results(results, s.sha256["fork"], ran_files)),
        )
        comparison = None
        files = upstream_tests.test_files(series)
        tree = rollbuild.root_of(self.settings) / "tvm"  # at the rolled head after its build
        files = [f for f in files if (tree / f).exists()]
        if self.upstream and files:
            with ui.step(f"{len(files)} upstream test file(s) the series touches, both sides"):
                before = upstream_tests.run_side(s.stock, tree, files)
                after = upstream_tests.run_side(s.fork, tree, files)
            comparison = upstream_tests.compare(before, after)
        return rows, comparison

    def prove(self, rev: str) -> Proof:
        """Roll, build, test; drop what was absorbed and repeat until nothing more is."""
        series = self.series
        dropped: dict[str, Proven] = {}
        rounds = 0
        while True:
            rounds += 1
            result = roll.roll(series, self.checkout, rev, self.settings.source)
            print("\n".join(roll.describe(result, len(series.patches), rev)))
            stock_wheel, fork_wheel = self.wheels(result)
            self.prepare_tree(result)
            rows, comparison = self.test(series, result, stock_wheel, fork_wheel)
            proven, unattributed = judge(series, result, rows, comparison)
            applied = (roll.CLEAN, roll.THREE_WAY)
            again = {p.patch for p in proven if p.verdict == ABSORBED and p.text in applied}
            dropped.update({p.patch: p for p in proven if p.verdict == ABSORBED})
            if not again:
                mine = {p.patch: p for p in proven}
                rows_all = [mine.get(p.name) or dropped[p.name] for p in self.series.patches]
                return Proof(
                    rev, result.base, rows_all, stock_wheel, fork_wheel, rounds, comparison,
                    unattributed, result,
                )  # fmt: skip
            ui.note(
                f"round {rounds}: {len(again)} applied patch(es) absorbed upstream "
                f"({', '.join(sorted(again))}): rolling the rest again"
            )
            series = Series(series.dir, tuple(p for p in series.patches if p.name not in again))

    def prepare_tree(self, result: roll.RollResult) -> None:
        """The proving tree at the rolled head: its test files are the ones that run."""
        rollbuild.prepare(self.settings, self.checkout, result.head or result.base)


def describe(proof: Proof) -> list[str]:
    lines = [
        f"proof of the roll onto {proof.rev} ({proof.base[:12]}), {proof.rounds} round(s): "
        f"stock {proof.stock_wheel.name} against rolled {proof.fork_wheel.name}"
    ]
    for r in proof.rows:
        lines.append(f"  {r.verdict:22} {r.patch}" + (f"  ({r.why})" if r.why else ""))
        lines += [f"      {t}" for t in r.upstream]
    if proof.upstream is not None:
        lines.append("upstream test files the series touches, stock REV against rolled:")
        lines.append(upstream_tests.summary(proof.upstream))
    if proof.unattributed:
        lines.append(f"failing rolled, added or changed by no patch: {len(proof.unattributed)}")
        lines += [f"    {t}" for t in proof.unattributed]
    counts = {k: sum(1 for r in proof.rows if r.verdict == k) for k in KINDS}
    lines.append("  " + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
    return lines


def markdown(proof: Proof, lines: list[str]) -> str:
    rows = [(r.patch, (r.text, r.verdict, r.why)) for r in proof.rows]
    title = f"The series rolled onto {proof.rev} ({proof.base[:12]}), built and tested"
    head = ("patch", "textual apply", pages.KIND, "why")
    return pages.render(title, lines, head, rows, KINDS)


def refuse(proof: Proof, series: Series) -> None:
    """Stop before anything is written unless every patch is proven (or absorbed), and no kept
    patch names an absorbed one in its Depends-On."""
    problems = [f"{r.patch}: {r.verdict}" for r in proof.blocking]
    if proof.unattributed:
        problems.append(f"{len(proof.unattributed)} upstream test(s) fail rolled, of no patch")
    dropped = {n.removesuffix(".patch") for n in proof.dropped}
    for p in series.patches:
        named = [d for d in p.trailers.get("Depends-On", []) if d.removesuffix(".patch") in dropped]
        if named and p.name not in proof.dropped:
            problems.append(f"{p.name}: Depends-On names absorbed {', '.join(named)}")
    if problems:
        raise PatchError(
            f"{len(problems)} problem(s) on {proof.rev}; patches/ and the lock are unchanged:\n  "
            + "\n  ".join(problems)
        )
