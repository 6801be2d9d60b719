"""The two source builds a semantic roll proves on: stock REV, and the series rolled onto it.

Both are built in one tree the tool owns (`cache_dir/roll/tvm`, sharing the checkout's
objects), with one build folder beside it: ccache keys on paths relative to the tree, so the
rolled build after the stock one recompiles only what the patches change, and so does every
later roll. Each wheel is kept under `cache_dir/roll/wheels/<commit12>-<variant>/` and reused,
so a roll stopped during the second build (or its tests) resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from tvmfork import git, ui
from tvmfork.errors import SourceError
from tvmfork.lock import Lock
from tvmfork.series import Series
from tvmfork.settings import Settings


def root_of(settings: Settings) -> Path:
    return settings.cache_dir / "roll"


def _gitlinks(repo: git.Repo, commit: str) -> dict[str, str]:
    out = {}
    for line in repo.out("ls-tree", "-r", commit).splitlines():
        meta, path = line.split("\t", 1)
        _mode, kind, sha = meta.split()
        if kind == "commit":
            out[path] = sha
    return out


def _head_of(path: Path) -> str | None:
    return git.Repo(path).rev("HEAD") if (path / ".git").exists() else None


def prepare(settings: Settings, checkout: Path, commit: str) -> Path:
    """The proving tree at `commit` (a commit of the checkout), with every submodule the
    checkout has populated at the same commit copied in; a gitlink that moved is an error
    naming it (fetch it into the checkout first)."""
    tree = root_of(settings) / "tvm"
    if not (tree / ".git").exists():
        tree.mkdir(parents=True, exist_ok=True)
        git.Repo(tree).run("init", "-q")
    repo = git.Repo(tree)
    if repo.run("cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode != 0:
        # the checkout may be shallow (a local clone of it would not share its objects)
        with ui.step(f"fetch {commit[:12]} into the roll's proving tree {tree}"):
            r = repo.run("fetch", "-q", "--no-recurse-submodules", checkout, commit, check=False)
        if r.returncode != 0:
            raise SourceError(f"cannot fetch {commit[:12]} from {checkout}:\n{r.stdout[-500:]}")
    repo.run("checkout", "-q", "-f", "--detach", commit)
    repo.run("clean", "-q", "-ffdx")
    source = git.Repo(checkout)
    for path, sha in sorted(_gitlinks(repo, commit).items()):
        dest = tree / path
        if _head_of(dest) == sha:
            continue
        have = checkout / path
        if _head_of(have) != sha:
            if _gitlinks(source, source.head()).get(path) != sha and (have / ".git").exists():
                raise SourceError(
                    f"{commit[:12]} needs {path} at {sha[:12]}, and the checkout has it at "
                    f"{(_head_of(have) or '?')[:12]}; check that commit out there first"
                )
            continue  # a submodule the checkout leaves out (CUDA's): not built for CPU
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(have, dest, symlinks=True)
    return tree


def build(
    settings: Settings,
    lock: Lock,
    series: Series,
    root: Path,
    checkout: Path,
    commit: str,
    included: set[str],
) -> Path:
    """The wheel of `commit` (stock REV, or the rolled head holding `included`), built from
    source in the proving tree, or the one an earlier roll built."""
    from tvmfork.wheel.source import SourceBuild

    variant = settings.wheel.variant
    keep = root_of(settings) / "wheels" / f"{commit[:12]}-{variant}"
    done = sorted(keep.glob("*.whl"))
    if done:
        ui.note(f"    {commit[:12]}: the wheel an earlier roll built, {done[-1].name}")
        return done[-1]
    tree = prepare(settings, checkout, commit)
    s = dataclasses.replace(
        settings,
        checkout_dir=tree,
        out_dir=keep,
        build=dataclasses.replace(settings.build, build_dir=root_of(settings) / f"build-{variant}"),
    )
    rev_lock = dataclasses.replace(lock, commit=commit, tag=commit[:12])
    version = f"{lock.version}+g{commit[:12]}.{variant}"
    res = SourceBuild(s, rev_lock, series, root).run(as_is=version, included=included)
    return res.path
