"""`tvmfork roll --to REV`: the series re-applied onto another upstream revision.

Each patch is applied in a temporary worktree at REV, plainly if it applies as it is,
otherwise with a 3-way merge, and reported as clean, merged with 3-way, empty because
upstream already has it, or conflict (files and hunks). Only when nothing conflicts are
`patches/` and the lock rewritten; on any conflict nothing in `patches/` changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tvmfork import git, pages
from tvmfork.checkout import BASE_REF, WORK_BRANCH, base_of, fetch_url
from tvmfork.errors import PatchError, SourceError
from tvmfork.lock import Lock
from tvmfork.patchflow import AM_FLAGS, ExportPlan, format_commit, write_export
from tvmfork.series import Patch, Series

CLEAN, THREE_WAY, UPSTREAM, CONFLICT = "clean", "merged with 3-way", "already upstream", "CONFLICT"


@dataclass
class Row:
    patch: str
    status: str
    files: list[str] = field(default_factory=list)
    hunks: list[str] = field(default_factory=list)


ROLLED_REF = "refs/tvmfork/rolled"  # keeps the last roll's commits from git gc


@dataclass
class RollResult:
    base: str
    rows: list[Row]
    head: str | None = None  # the patches that applied, on REV

    @property
    def conflicts(self) -> list[Row]:
        return [r for r in self.rows if r.status == CONFLICT]


def _hunks(patch: Patch, files: list[str]) -> list[str]:
    out, current = [], ""
    for line in patch.data.decode("utf-8", "replace").splitlines():
        if line.startswith("diff --git "):
            current = line.rsplit(" b/", 1)[-1]
        elif line.startswith("@@") and current in files:
            out.append(f"{current}: {line}")
    return out


def resolve(repo: git.Repo, rev: str, source: str | None) -> str:
    """REV as a commit in the checkout, fetched from `source` when it is not there yet."""
    local = repo.rev(rev)
    if local:
        return local
    if source is None:
        raise SourceError(f"{rev} is not in {repo.path}; pass --source to fetch it")
    # a remote serves refs and whole commit ids only: a local git source expands an
    # abbreviated commit (or any revision) itself
    if Path(source).expanduser().is_dir():
        full = git.Repo(Path(source).expanduser()).rev(rev)
        if full:
            rev = full
    r = repo.run(
        "fetch", "--no-tags", "--no-recurse-submodules", fetch_url(source), rev, check=False
    )
    if r.returncode != 0:
        raise SourceError(f"cannot fetch {rev} from {source}:\n    {r.stdout.strip()[-500:]}")
    got = repo.rev("FETCH_HEAD")
    assert got is not None
    return got


def _apply_one(wt: git.Repo, patch: Patch) -> Row:
    before = wt.head()
    path = patch.path.resolve()
    if wt.run("apply", "--check", path, check=False).returncode == 0:
        wt.run("am", *AM_FLAGS, path, env=git.COMMITTER)
        return Row(patch.name, CLEAN)
    flags = [f for f in AM_FLAGS if f != "--no-3way"]
    r = wt.run("am", *flags, "--3way", path, check=False, env=git.COMMITTER)
    if r.returncode == 0:
        return Row(patch.name, UPSTREAM if wt.head() == before else THREE_WAY)
    unmerged = wt.out("diff", "--name-only", "--diff-filter=U").split()
    wt.run("am", "--abort", check=False)
    if not unmerged and "No changes" in r.stdout:
        return Row(patch.name, UPSTREAM)
    files = unmerged or sorted(set(re.findall(r"patch failed: (\S+?):\d+", r.stdout)))
    return Row(patch.name, CONFLICT, files=files, hunks=_hunks(patch, files))


def roll(series: Series, checkout: Path, rev: str, source: str | None) -> RollResult:
    repo = git.Repo(checkout)
    base_of(repo)  # a tvmfork checkout
    if repo.dirty():
        raise SourceError(f"{checkout} has uncommitted changes; commit or stash them first")
    new_base = resolve(repo, rev, source)
    result = RollResult(base=new_base, rows=[])
    with git.worktree(repo, new_base) as wt:
        for patch in series.patches:
            result.rows.append(_apply_one(wt, patch))
        result.head = wt.head()
    repo.run("update-ref", ROLLED_REF, result.head)  # reachable: a proof fetches it
    repo.run("update-ref", ROLLED_REF + "-base", result.base)
    return result


def describe(result: RollResult, count: int, rev: str) -> list[str]:
    """What happened to each patch, conflicts with their files and hunks."""
    lines = [f"rolling {count} patch(es) onto {rev} ({result.base[:12]}):"]
    for row in result.rows:
        lines.append(f"  {row.status:18} {row.patch}")
        lines += [f"      conflict in {f}" for f in row.files]
        lines += [f"      hunk {h}" for h in row.hunks]
    return lines


def markdown(result: RollResult, rev: str, lines: list[str]) -> str:
    """The roll as a docs page (`pages`): each patch's status, and a conflict's files."""
    rows = [(r.patch, (r.status, ", ".join(r.files))) for r in result.rows]
    kinds = (CLEAN, THREE_WAY, UPSTREAM, CONFLICT)
    title = f"The series rolled onto {rev} ({result.base[:12]})"
    return pages.render(title, lines, ("patch", pages.KIND, "conflicting files"), rows, kinds)


def refuse_conflicts(result: RollResult, rev: str) -> None:
    if result.conflicts:
        raise PatchError(
            f"{len(result.conflicts)} patch(es) conflict with {rev}; patches/ and the lock are "
            "unchanged. Resolve them in a checkout (tvmfork apply, git rebase --onto), then "
            "tvmfork export"
        )


def write(
    result: RollResult,
    series: Series,
    checkout: Path,
    lock: Lock,
    rev: str,
    absorbed: frozenset[str] = frozenset(),
) -> None:
    """After a roll without conflicts (or whose conflicts a proof found `absorbed`): patches/,
    the lock and the checkout move to REV. Every patch of `series` the roll did not apply is
    removed from patches/."""
    assert result.head is not None
    assert all(r.patch in absorbed for r in result.conflicts), result.conflicts
    repo = git.Repo(checkout)
    kept = [r.patch for r in result.rows if r.status in (CLEAN, THREE_WAY)]
    commits = repo.commits(result.base, result.head)
    assert len(commits) == len(kept), (commits, kept)
    plan = ExportPlan(
        order=kept,
        files={name: format_commit(repo, c) for name, c in zip(kept, commits, strict=True)},
        stale=[],
        removed=[p.name for p in series.patches if p.name not in kept],
    )
    write_export(series.dir, plan)
    subs = {}
    for sub in lock.submodules:
        line = repo.out("ls-tree", result.base, sub.path)
        if line:
            subs[sub.path] = line.split()[2]
    tree = repo.out("rev-parse", f"{result.base}^{{tree}}")
    lock.path.write_text(update_lock_text(lock.path.read_text(), rev, result.base, tree, subs))
    repo.run("update-ref", BASE_REF, result.base)
    repo.run("checkout", "-q", "-B", WORK_BRANCH, result.head)


def update_lock_text(text: str, rev: str, commit: str, tree: str, subs: dict[str, str]) -> str:
    """Rewrite the pin in the lock's text, keeping its comments and layout."""

    def set_key(section: str, key: str, value: str) -> str:
        return re.sub(rf'(?m)^({key}\s*=\s*)"[^"]*"', rf'\g<1>"{value}"', section, count=1)

    parts = re.split(r"(?m)^(?=\[)", text)
    out = []
    for part in parts:
        if part.startswith("[upstream]"):
            part = set_key(part, "commit", commit)
            part = set_key(part, "tree", tree)
            if not re.fullmatch(r"[0-9a-f]{40}", rev):
                part = set_key(part, "tag", rev)
                m = re.fullmatch(r"v?(\d+\.\d+(?:\.\d+)?\S*)", rev)
                if m:
                    part = set_key(part, "version", m.group(1))
        elif part.startswith("[[submodule]]"):
            m = re.search(r'(?m)^path\s*=\s*"([^"]*)"', part)
            if m and m.group(1) in subs:
                part = set_key(part, "commit", subs[m.group(1)])
        out.append(part)
    return "".join(out)
