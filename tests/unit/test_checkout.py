"""`tvmfork checkout` from a git directory, a URL and a plain folder, with overrides."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tvmfork import checkout as co
from tvmfork import lock as lockmod
from tvmfork.errors import SourceError

from .conftest import Fork, Upstream, git, write

pytestmark = pytest.mark.unit


def _lock(fork: Fork) -> lockmod.Lock:
    return lockmod.load(fork.root / "patches/lock.toml")


def test_checkout_from_git_dir_verifies_commit_and_submodule(fork: Fork) -> None:
    assert fork.tvm("rev-parse", "HEAD") == fork.upstream.commit
    assert fork.tvm("rev-parse", "refs/tvmfork/base") == fork.upstream.commit
    assert git(fork.checkout / "3rdparty/tvm-ffi", "rev-parse", "HEAD") == fork.upstream.ffi_commit
    assert (fork.checkout / "3rdparty/tvm-ffi/include/ffi.h").is_file()
    assert fork.tvm("status", "--porcelain") == ""


def test_checkout_from_url(fork: Fork, tmp_path: Path) -> None:
    dest = tmp_path / "by-url"
    report = co.checkout(_lock(fork), dest, fork.upstream.repo.as_uri(), submodules="none")
    assert report[0].verified == "commit"
    assert git(dest, "rev-parse", "HEAD") == fork.upstream.commit


def test_wrong_tag_is_refused_with_both_hashes(fork: Fork, tmp_path: Path) -> None:
    up = fork.upstream.repo
    write(up / "src/op.cc", "int op() { return 2; }\n")
    git(up, "commit", "-qam", "moved on")
    git(up, "tag", "-f", "v1.0.0")
    moved = git(up, "rev-parse", "HEAD")
    dest = tmp_path / "wrong"
    with pytest.raises(SourceError) as err:
        co.checkout(_lock(fork), dest, str(up), submodules="none")
    assert moved in str(err.value) and fork.upstream.commit in str(err.value)
    assert not dest.exists()


def _export_folder(up: Upstream, dest: Path) -> Path:
    dest.mkdir()
    archive = subprocess.run(
        ["git", "archive", "HEAD"], cwd=up.repo, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def test_checkout_from_plain_folder_is_verified_by_tree(fork: Fork, tmp_path: Path) -> None:
    folder = _export_folder(fork.upstream, tmp_path / "unpacked")
    ffi_folder = tmp_path / "ffi-folder"
    shutil.copytree(fork.upstream.ffi, ffi_folder, ignore=shutil.ignore_patterns(".git"))
    dest = tmp_path / "from-folder"
    report = co.checkout(_lock(fork), dest, str(folder), {"3rdparty/tvm-ffi": str(ffi_folder)})
    assert [(f.path, f.verified) for f in report] == [
        (".", "tree"),
        ("3rdparty/tvm-ffi", "unverified"),
    ]
    assert git(dest, "rev-parse", "HEAD^{tree}") == fork.upstream.tree
    assert (dest / "3rdparty/tvm-ffi/include/ffi.h").is_file()


def test_modified_folder_is_refused(fork: Fork, tmp_path: Path) -> None:
    folder = _export_folder(fork.upstream, tmp_path / "unpacked")
    write(folder / "src/op.cc", "int op() { return 3; }\n")
    with pytest.raises(SourceError, match=fork.upstream.tree):
        co.checkout(_lock(fork), tmp_path / "x", str(folder), submodules="none")


def test_existing_destination_is_never_overwritten(fork: Fork) -> None:
    with pytest.raises(SourceError, match="not empty"):
        co.checkout(_lock(fork), fork.checkout, str(fork.upstream.repo))


def test_unknown_submodule_override(fork: Fork, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no submodule 3rdparty/nope"):
        co.checkout(_lock(fork), tmp_path / "y", str(fork.upstream.repo), {"3rdparty/nope": "x"})


def test_missing_source(fork: Fork, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such folder"):
        co.checkout(_lock(fork), tmp_path / "z", str(tmp_path / "missing"))
