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


def test_checkout_from_a_folder_of_mirrors(fork: Fork, tmp_path: Path) -> None:
    """TVM and its submodule are found by name in one folder, each in another layout."""
    lock = _lock(fork)
    mirrors = tmp_path / "mirrors"
    tvm_at = co.mirror_candidates(mirrors, lock.url)[0]  # owner+name/repo
    ffi_url = lock.submodules[0].url
    ffi_at = co.mirror_candidates(mirrors, ffi_url)[-1]  # name.git
    tvm_at.parent.mkdir(parents=True)
    for repo, at in ((fork.upstream.repo, tvm_at), (fork.upstream.ffi, ffi_at)):
        subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(at)], check=True)
    dest = tmp_path / "from-mirrors"
    report = co.checkout(lock, dest, mirrors=mirrors)
    assert [(f.path, f.source, f.verified) for f in report] == [
        (".", str(tvm_at), "commit"),
        ("3rdparty/tvm-ffi", str(ffi_at), "commit"),
    ]
    assert git(dest / "3rdparty/tvm-ffi", "rev-parse", "HEAD") == fork.upstream.ffi_commit


def test_mirrors_without_tvm_name_the_places_looked_at(fork: Fork, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match=r"not in the folder of mirrors .*\+.*/repo"):
        co.checkout(_lock(fork), tmp_path / "x", mirrors=tmp_path / "empty")
    assert not (tmp_path / "x").exists()
    with pytest.raises(SourceError, match="no such folder of mirrors"):
        co.checkout(_lock(fork), tmp_path / "y", mirrors=tmp_path / "missing")


def test_a_submodule_from_inside_a_wheel_of_the_mirrors(tmp_path: Path) -> None:
    """dlpack has no mirror of its own here: apache-tvm-ffi's wheel carries its headers."""
    import zipfile

    folder = tmp_path / "mirrors"
    folder.mkdir()
    with zipfile.ZipFile(folder / "apache_tvm_ffi-0.1.13.post2-cp311-abi3-any.whl", "w") as zf:
        zf.writestr("tvm_ffi/3rdparty/dlpack/include/dlpack/dlpack.h", "#define DLPACK 1\n")
        zf.writestr("tvm_ffi/include/tvm/ffi/c_api.h", "\n")
    scratch = tmp_path / "scratch"
    found = co.Mirrors(folder, scratch).source_for("https://github.com/dmlc/dlpack")
    assert found is not None
    path, shown = found
    assert (Path(path) / "include/dlpack/dlpack.h").read_text() == "#define DLPACK 1\n"
    assert "apache_tvm_ffi-0.1.13.post2" in shown and "tvm_ffi/3rdparty/dlpack/" in shown
    assert co.Mirrors(folder, scratch).source_for("https://github.com/x/libbacktrace") is None
