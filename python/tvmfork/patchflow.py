"""`apply` (series -> commits in a checkout) and `export` (commits -> series), round-trip exact.

`apply` runs `git am` in a temporary worktree, so a patch that fails leaves the checkout
exactly as it was; on success the checkout moves to the new commits with one `git checkout`,
which rewrites only files whose content changed (so a rebuild recompiles only those).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import git, ui
from tvmfork.checkout import WORK_BRANCH, base_of
from tvmfork.errors import PatchError, SourceError
from tvmfork.series import SERIES, Patch, Series, read_order

# `git format-patch` flags, fixed so that apply -> export is byte-identical and independent of
# the user's git version and configuration (after Electron's script/lib/git.py).
FORMAT_PATCH_FLAGS = (
    "--stdout",
    "--zero-commit",  # "From 000..." instead of the commit hash, which changes on every am
    "--full-index",  # full blob ids: stable under any core.abbrev, and enable 3-way merges
    "--no-signature",  # no "-- \n<git version>" footer that changes with git upgrades
    "--keep-subject",  # keep "[Relax][Legalize] ..." as written, no "[PATCH]" added
    "--no-stat",  # a diffstat is redundant and its layout depends on the terminal
    "--no-renames",  # rename detection varies with heuristics; full diffs do not
    "--diff-algorithm=myers",  # whatever diff.algorithm the user configured
    "--unified=3",  # whatever diff.context the user configured
    "--no-notes",  # notes are local annotations, not part of a patch
    "--encoding=UTF-8",
)
# --keep: keep "[Relax][Legalize] ..." subjects whole (the counterpart of --keep-subject)
AM_FLAGS = ("--keep", "--committer-date-is-author-date", "--quiet", "--no-3way", "--keep-cr")
FAILED_RE = re.compile(r"patch failed: (\S+?):(\d+)")
DOES_NOT_APPLY_RE = re.compile(
    r"error: (\S+?): (does not exist in index|already exists in "
    r"working directory|patch does not apply|No such file)"
)


@dataclass
class ApplyResult:
    head: str
    applied: list[str] = field(default_factory=list)
    unchanged: bool = False


def _hunk_at(patch_text: str, path: str, line: int) -> str | None:
    """The @@ header of the hunk of `path` that starts at old line `line`."""
    in_file = False
    for raw in patch_text.splitlines():
        if raw.startswith("diff --git "):
            in_file = raw.endswith(f" b/{path}")
        elif in_file and raw.startswith("@@"):
            m = re.match(r"@@ -(\d+)", raw)
            if m and int(m.group(1)) == line:
                return raw
    return None


def _explain_failure(patch_name: str, patch_text: str, output: str) -> str:
    lines = [f"patch {patch_name} does not apply"]
    m = FAILED_RE.search(output)
    if m:
        path, line = m.group(1), int(m.group(2))
        hunk = _hunk_at(patch_text, path, line)
        lines.append(f"  file: {path}")
        lines.append(f"  hunk: {hunk or f'starting at line {line}'}")
    else:
        m2 = DOES_NOT_APPLY_RE.search(output)
        if m2:
            lines.append(f"  file: {m2.group(1)} ({m2.group(2)})")
    detail = "\n".join("    " + s for s in output.strip().splitlines()[-12:])
    lines.append("  git said:\n" + detail)
    lines.append(
        "the checkout was left exactly as it was; refresh the patch in a checkout "
        "(tvmfork apply up to it, fix, tvmfork export)"
    )
    return "\n".join(lines)


def format_commit(repo: git.Repo, commit: str) -> bytes:
    r = repo.run("format-patch", *FORMAT_PATCH_FLAGS, "-1", commit)
    return r.stdout.encode("utf-8")


def _series_matches(repo: git.Repo, base: str, series: Series) -> bool:
    commits = repo.commits(base)
    if len(commits) != len(series.patches):
        return False
    pairs = zip(commits, series.patches, strict=True)
    return all(format_commit(repo, c) == p.data for c, p in pairs)


def series_applied(checkout_dir: Path, series: Series) -> bool:
    """Whether the checkout's commits on top of its base are exactly the series."""
    repo = git.Repo(checkout_dir)
    return _series_matches(repo, base_of(repo), series)


def am(wt: git.Repo, patch: Patch, three_way: bool = False) -> str:
    """`git am` one patch in a worktree; on failure abort it and raise a PatchError that
    names the patch, the file and the hunk. Returns git's output."""
    flags = [f for f in AM_FLAGS if not (three_way and f == "--no-3way")]
    if three_way:
        flags.append("--3way")
    r = wt.run("am", *flags, patch.path.resolve(), check=False, env=git.COMMITTER)
    if r.returncode != 0:
        wt.run("am", "--abort", check=False)
        check = wt.run("apply", "--check", "-v", patch.path.resolve(), check=False)
        raise PatchError(
            _explain_failure(
                patch.name, patch.data.decode("utf-8", "replace"), r.stdout + "\n" + check.stdout
            )
        )
    return r.stdout


def apply(series: Series, checkout_dir: Path, force: bool = False) -> ApplyResult:
    repo = git.Repo(checkout_dir)
    if not checkout_dir.is_dir():
        raise SourceError(f"no checkout at {checkout_dir}; create one with `tvmfork checkout`")
    base = base_of(repo)
    dirty = repo.dirty()
    if dirty:
        shown = "\n  ".join(dirty[:20])
        raise SourceError(
            f"{checkout_dir} has uncommitted changes; commit, stash or discard them first "
            f"(nothing was touched):\n  {shown}"
        )
    on_top = repo.commits(base)
    if on_top:
        if _series_matches(repo, base, series):
            ui.note(f"the series is already applied at {repo.head()[:12]}; nothing to do")
            return ApplyResult(head=repo.head(), applied=[], unchanged=True)
        if not force:
            raise SourceError(
                f"{checkout_dir} has {len(on_top)} commit(s) on top of the base that differ from "
                "the series; run `tvmfork export` to keep them, or `tvmfork apply --force` "
                "(the old head is kept under refs/tvmfork/backup)"
            )
        repo.run("update-ref", "refs/tvmfork/backup", repo.head())
    result = ApplyResult(head=base)
    with git.worktree(repo, base) as wt:
        for patch in series.patches:
            am(wt, patch)
            result.applied.append(patch.name)
        result.head = wt.head()
    repo.run("checkout", "-q", "-B", WORK_BRANCH, result.head)
    return result


def _slug(subject: str) -> str:
    words = re.sub(r"\[[^\]]*\]", " ", subject)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", words).strip("-").lower()
    return (slug[:60].rstrip("-") or "patch") + ".patch"


@dataclass
class ExportPlan:
    order: list[str]
    files: dict[str, bytes]
    stale: list[str]
    removed: list[str]


def plan_export(patches_dir: Path, checkout_dir: Path, series: Series | None) -> ExportPlan:
    repo = git.Repo(checkout_dir)
    busy = in_progress(repo)
    if busy:
        # Mid-rebase, HEAD holds only the commits replayed so far: exporting would delete
        # the rest of the series from patches/.
        raise SourceError(
            f"{checkout_dir} is in the middle of a {busy}; finish it (git {busy} --continue) "
            f"or abort it (git {busy} --abort), then export"
        )
    base = base_of(repo)
    by_subject = {p.subject: p.name for p in series.patches} if series else {}
    old_order = read_order(patches_dir) if (patches_dir / SERIES).is_file() else []
    order: list[str] = []
    files: dict[str, bytes] = {}
    for commit in repo.commits(base):
        data = format_commit(repo, commit)
        subject = repo.out("log", "-1", "--format=%s", commit)
        name = by_subject.get(subject) or _slug(subject)
        if name in files:
            raise PatchError(f"two commits export to {name}; give them distinct subjects")
        order.append(name)
        files[name] = data
    stale = []
    for name in order:
        path = patches_dir / name
        if not path.is_file():
            stale.append(f"{name}: new")
        elif path.read_bytes() != files[name]:
            stale.append(f"{name}: changed")
    removed = [n for n in old_order if n not in files]
    stale += [f"{n}: no longer in the checkout" for n in removed]
    if not stale and order != old_order:
        stale.append("series: order changed")
    return ExportPlan(order=order, files=files, stale=stale, removed=removed)


def in_progress(repo: git.Repo) -> str:
    """'rebase', 'am', 'cherry-pick' or 'merge' when one is under way in `repo`, else ''."""
    gitdir = Path(repo.out("rev-parse", "--absolute-git-dir"))
    for marker, what in (
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("MERGE_HEAD", "merge"),
    ):
        if (gitdir / marker).exists():
            if marker == "rebase-apply" and (gitdir / marker / "applying").exists():
                return "am"
            return what
    return ""


def write_export(patches_dir: Path, plan: ExportPlan) -> None:
    patches_dir.mkdir(parents=True, exist_ok=True)
    for name, data in plan.files.items():
        (patches_dir / name).write_bytes(data)
    for name in plan.removed:
        (patches_dir / name).unlink(missing_ok=True)
    series_file = patches_dir / SERIES
    header = []
    if series_file.is_file():
        header = [ln for ln in series_file.read_text().splitlines() if ln.startswith("#")]
    series_file.write_text("\n".join([*header, *plan.order]) + "\n")
