"""`tvmfork check`: the series is sound before anything is built from it.

Its result is a list of problems: the errors of loading the lock, the series and the
checkout are caught here and listed (errors.py), the rest is raised."""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import fixes, nativelane
from tvmfork import lock as lockmod
from tvmfork import series as seriesmod
from tvmfork.errors import PatchError, ProcessError, SourceError
from tvmfork.series import REQUIRED_TRAILERS, STATUS_RE, Patch, Series


@dataclass
class Report:
    series: Series | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)  # python, native, or build (needs one)


def fixes_problems(patch: Patch, repo_root: Path) -> list[str]:
    """Each `Fixes:` reference resolves: a repository file (and its #section) exists."""
    out = []
    for ref in fixes.refs(patch.trailers.get("Fixes", [])):
        if ref.upstream:
            continue
        target = repo_root / ref.path
        if " " in ref.path or not target.is_file():
            out.append(
                f"{patch.name}: Fixes: {ref.text!r} is neither a file of this repository "
                "(patches/README.md#section), an issue (owner/repo#N) nor a URL"
            )
        elif ref.anchor and ref.anchor not in fixes.anchors(target.read_text()):
            out.append(
                f"{patch.name}: Fixes: {ref.text!r}: {ref.path} has no section #{ref.anchor}"
            )
    return out


# A patch is named for what it changes; a count ("seven ops that...") goes stale with the next
# fix added to it, and says nothing a reviewer can check.
NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty several multiple various many dozen".split()
)


def name_problems(patch: Patch) -> list[str]:
    """The subject and file name do not start with a count."""
    out = []
    subject = re.sub(r"\[[^\]]*\]", " ", patch.subject).strip()
    for what, text in (("subject", subject), ("file name", patch.name)):
        first = re.split(r"[^A-Za-z0-9]+", text.lower(), maxsplit=1)[0]
        if first in NUMBER_WORDS or first.isdigit():
            out.append(
                f"{patch.name}: the {what} starts with a count ({first!r}): name the patch "
                "for the behaviour it changes (an op family, a layer), which stays true as "
                "fixes are added"
            )
    return out


# Upstream's titles as its log writes them today (`git log --since=2025-09 main`): the PyTorch
# and ONNX importers are `[Relax][PyTorch]` and `[Relax][ONNX]` (80 and 32 commits), never
# `[Relax][Frontend][Torch]`; TIR is `[TIRx]` since the pin's tirx namespace; `[DLight]`.
OUTDATED_TAGS = {
    "[Relax][Frontend][Torch]": "[Relax][PyTorch]",
    "[Relax][Frontend][ONNX]": "[Relax][ONNX]",
    "[Frontend][Torch]": "[Relax][PyTorch]",
    "[Frontend][ONNX]": "[Relax][ONNX]",
    "[TIR]": "[TIRx]",
    "[Dlight]": "[DLight]",
}
# A patch whose shipped files are all in one importer is titled by it.
FRONTEND_TAGS = {
    "python/tvm/relax/frontend/torch/": "[Relax][PyTorch]",
    "python/tvm/relax/frontend/onnx/": "[Relax][ONNX]",
}
TAGS_RE = re.compile(r"^((?:\[[^\]]+\])+) \S")


def title_problems(patch: Patch) -> list[str]:
    """The subject is `[Component]... What it changes`, in upstream's current tags."""
    m = TAGS_RE.match(patch.subject)
    if not m:
        return [
            f"{patch.name}: the subject {patch.subject!r} does not start with upstream's "
            "component tags ([Relax][PyTorch] Import ..., [TIRx] ...)"
        ]
    tags = re.findall(r"\[[^\]]+\]", m.group(1))
    out: list[str] = []
    seen: set[int] = set()
    for old, new in OUTDATED_TAGS.items():  # longest forms first: one problem per tag
        want = re.findall(r"\[[^\]]+\]", old)
        for i in range(len(tags)):
            span = set(range(i, i + len(want)))
            if tags[i : i + len(want)] == want and not span & seen:
                seen |= span
                out.append(
                    f"{patch.name}: the subject's {old} is not upstream's form today: write {new}"
                )
    shipped = [f for f in patch.files if f.startswith("python/") or f.startswith("src/")]
    for prefix, tag in FRONTEND_TAGS.items():
        if (
            shipped
            and all(f.startswith(prefix) for f in shipped)
            and not m.group(1).startswith(tag)
        ):
            out.append(f"{patch.name}: it changes only {prefix}: its subject starts with {tag}")
    return out


# Where upstream keeps an importer's tests today: one file each, so a new test goes beside the
# op's own there, not into a new per-op file a reviewer would ask to fold in.
TEST_HOMES = {
    "tests/python/relax/test_frontend_onnx_": "tests/python/relax/test_frontend_onnx.py",
}


def placement_problems(patch: Patch) -> list[str]:
    """The patch adds no test file where upstream keeps one file for the subsystem."""
    return [
        f"{patch.name}: it adds {f}: upstream keeps these tests in {home}; put them beside "
        "the op's own there"
        for f in patch.added_files
        for prefix, home in TEST_HOMES.items()
        if f.startswith(prefix)
    ]


def _test_exists(test: str, repo_root: Path) -> bool:
    """`tests/regression/x.py` or `x.py::test_name[param]`: the file, and the test function."""
    file, _, node = test.partition("::")
    path = repo_root / file
    if not path.is_file():
        return False
    name = node.split("[", 1)[0].split("::")[-1]
    return (
        not name or re.search(rf"^\s*def {re.escape(name)}\(", path.read_text(), re.M) is not None
    )


def trailer_problems(patch: Patch, repo_root: Path) -> list[str]:
    out = fixes_problems(patch, repo_root)
    for key in REQUIRED_TRAILERS:
        values = patch.trailers.get(key, [])
        if not values or not all(values):
            out.append(f"{patch.name}: missing trailer {key}:")
    status = patch.trailer("Upstream-Status")
    if status and not STATUS_RE.match(status):
        out.append(
            f"{patch.name}: Upstream-Status {status!r} is not one of pending, fork-only, "
            "submitted <url>, merged <commit>"
        )
    for test in patch.trailers.get("Regression-Test", []):
        test_file = test.split("::", 1)[0]
        if not test_file.startswith("tests/regression/"):
            out.append(f"{patch.name}: Regression-Test {test!r} is not under tests/regression/")
        elif not _test_exists(test, repo_root):
            out.append(f"{patch.name}: Regression-Test {test!r} does not exist")
    return out


def standalone_problems(series: Series, checkout: Path) -> list[str]:
    """Each patch applies on the pin after its `Depends-On:` patches alone, so each can be
    staged as a pull request of its own (`tvmfork stage`)."""
    from tvmfork import git, hunks
    from tvmfork.checkout import base_of
    from tvmfork.patchflow import am

    repo = git.Repo(checkout)
    base = base_of(repo)
    out = []
    with git.worktree(repo, base) as wt:
        for p in series.patches:
            wt.run("reset", "-q", "--hard", base)
            deps = series.dependencies(p)
            try:
                for q in [*deps, p]:
                    hunks.refuse_misplaced(wt.path, q)
                    am(wt, q)
            except PatchError as exc:
                named = ", ".join(d.name for d in deps) or "none"
                first = str(exc).splitlines()[0]
                out.append(
                    f"{p.name} does not apply on the pin after its Depends-On patches alone "
                    f"({named}): {first}; add a Depends-On: trailer for the patch it needs"
                )
    return out


def run(repo_root: Path, stock_wheel: Path | None, checkout: Path | None = None) -> Report:
    """Check the series at `repo_root/patches`; `stock_wheel` enables the overlay check and
    `checkout` (a tvmfork checkout) the check that each patch applies with its dependencies
    alone."""
    report = Report()
    patches_dir = repo_root / "patches"
    try:
        lock = lockmod.load(patches_dir / seriesmod.LOCK)
        report.problems += lock.ffi_table_problems()
    except PatchError as exc:  # an invalid lock is one of the problems listed
        report.problems.append(str(exc))
    try:
        series = seriesmod.load(patches_dir)
    except PatchError as exc:
        report.problems.append(str(exc))
        return report
    report.series = series
    for name in seriesmod.unlisted(patches_dir):
        report.problems.append(f"{name} is in patches/ but not listed in the series")
    subjects: dict[str, str] = {}
    report.kinds = {p.name: "native" if p.native else "python" for p in series.patches}
    names = set(report.kinds)
    unknown_deps = [
        f"{p.name}: Depends-On: {dep} names no patch of the series"
        for p in series.patches
        for dep in p.trailers.get("Depends-On", [])
        if dep not in names and f"{dep}.patch" not in names
    ]
    if unknown_deps:  # the stage and overlay checks follow Depends-On: they cannot run
        report.problems += unknown_deps
        return report
    for p in series.patches:
        if report.kinds[p.name] == "python" and series.needs_build(p):
            report.kinds[p.name] = "build"  # needs a native patch it depends on
        report.problems += trailer_problems(p, repo_root)
        report.problems += name_problems(p)
        report.problems += title_problems(p)
        report.problems += placement_problems(p)
        if p.subject in subjects:
            report.problems.append(f"{p.name} and {subjects[p.subject]} share a subject")
        subjects[p.subject] = p.name
    native_only = [n for n, k in report.kinds.items() if k != "python"]
    if native_only:
        report.notes.append(
            f"{len(native_only)} patch(es) can be proven only by the native lane (a source "
            "build, `make wheel MODE=source`, then `make test-native`; overlays leave them "
            "out): " + ", ".join(native_only)
        )
        stale = nativelane.staleness(repo_root, series)
        if stale:
            report.notes.append(
                f"NATIVE LANE STALE: {stale}; run `make wheel MODE=source VARIANT=cpu` (ccache "
                "keeps a rebuild to minutes) and `make test-native`, which records its result"
            )
    if checkout is None:
        report.notes.append(
            "stage check not run: no checkout (`tvmfork checkout` makes one); it proves each "
            "patch applies on the pin after its Depends-On patches alone"
        )
    else:
        try:
            problems = standalone_problems(series, checkout)
        except (SourceError, ProcessError) as exc:  # a checkout git cannot work in
            problems = [f"stage check: {exc}"]
        report.problems += problems
        if not problems:
            report.notes.append(
                f"each of the {len(series.patches)} patch(es) applies on the pin after its "
                f"Depends-On patches alone (checkout {checkout})"
            )
    python_patches = [p for p in series.patches if not series.needs_build(p)]
    if stock_wheel is None:
        report.notes.append(
            "overlay check not run: the stock wheel is not in the cache "
            "(`tvmfork wheel --mode overlay` downloads it)"
        )
    elif python_patches:
        from tvmfork.wheel.overlay import patched_files

        with zipfile.ZipFile(stock_wheel) as zf:
            try:
                patched_files(zf, python_patches)
                report.notes.append(
                    f"the Python hunks of {len(python_patches)} Python-only patch(es) apply "
                    f"cleanly to {stock_wheel.name}"
                )
            except PatchError as exc:
                report.problems.append(str(exc))
    return report
