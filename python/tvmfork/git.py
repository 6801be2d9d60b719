"""Thin wrapper over the git command line for one repository."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tvmfork import proc

# Commits that tvmfork makes (git am) get a fixed committer, and their committer date is the
# author date, so applying the same series to the same base always yields the same hashes.
COMMITTER = {
    "GIT_COMMITTER_NAME": "tvmfork",
    "GIT_COMMITTER_EMAIL": "tvmfork@localhost",
}
# Settings that would change what git writes; pinned so that output never depends on a
# user's ~/.gitconfig.
STABLE_CONFIG = (
    "-c", "core.quotepath=false",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.relative=false",
    "-c", "diff.external=",
    "-c", "color.ui=never",
    "-c", "commit.gpgSign=false",
    "-c", "core.autocrlf=false",
    "-c", "am.threeWay=false",
    "-c", "am.keepcr=false",
    "-c", "format.signOff=false",
    "-c", "init.defaultBranch=main",
)  # fmt: skip


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path

    def run(
        self,
        *args: str | Path,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return proc.run(
            ["git", *STABLE_CONFIG, *args], cwd=self.path, check=check, env=env, input=input
        )

    def out(self, *args: str | Path) -> str:
        return self.run(*args).stdout.strip()

    def ok(self, *args: str | Path) -> bool:
        return self.run(*args, check=False).returncode == 0

    def rev(self, rev: str) -> str | None:
        r = self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def head(self) -> str:
        return self.out("rev-parse", "HEAD")

    def branch(self) -> str | None:
        r = self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def dirty(self) -> list[str]:
        """Tracked files with changes (staged or not); untracked files are not counted."""
        text = self.run("status", "--porcelain", "--untracked-files=no").stdout
        return [line[3:] for line in text.splitlines() if line.strip()]

    def commits(self, base: str, head: str = "HEAD") -> list[str]:
        text = self.out("rev-list", "--reverse", f"{base}..{head}")
        return text.split() if text else []


def is_git_dir(path: Path) -> bool:
    """A work tree or a bare repository (a mirror) that git can read."""
    if not path.is_dir():
        return False
    r = proc.run(["git", "rev-parse", "--git-dir"], cwd=path, check=False)
    # A folder inside some other repository is not itself a git source.
    if r.returncode != 0:
        return False
    git_dir = (path / r.stdout.strip()).resolve()
    return git_dir == path.resolve() or git_dir == (path / ".git").resolve()


def identity_env() -> dict[str, str]:
    """Author and committer for commits tvmfork makes itself (a plain-folder base)."""
    return {"GIT_AUTHOR_NAME": "tvmfork", "GIT_AUTHOR_EMAIL": "tvmfork@localhost", **COMMITTER}


@contextmanager
def worktree(repo: Repo, rev: str) -> Iterator[Repo]:
    """A temporary detached worktree of `repo` at `rev`, removed afterwards whatever happens.

    Work done there (git am, say) never touches the checkout's own files; the commits it
    makes stay in the repository.
    """
    tmp = Path(tempfile.mkdtemp(prefix="tvmfork-wt-"))
    work = tmp / "wt"
    try:
        repo.run("worktree", "add", "-q", "--detach", work, rev)
        yield Repo(work)
    finally:
        repo.run("worktree", "remove", "--force", work, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        repo.run("worktree", "prune", check=False)
