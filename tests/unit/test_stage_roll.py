"""stage and roll against a fake upstream that moves on (real git repos in tmp dirs)."""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from tvmfork import git as gitmod
from tvmfork import roll
from tvmfork import series as seriesmod
from tvmfork.stage import pinned_linters, stage

from .conftest import PY_FILE, Fork, git, write

pytestmark = pytest.mark.unit

LICENSE = "# Licensed to the Apache Software Foundation (ASF) under one\n"
RUFF = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))


def _ruff(wt: gitmod.Repo) -> tuple[dict[str, list[str]], str]:
    return {"ruff": [RUFF]}, ""


def _none(wt: gitmod.Repo) -> tuple[dict[str, list[str]], str]:
    return {}, "no .pre-commit-config.yaml upstream: linter versions unknown"


@pytest.fixture
def two(fork: Fork) -> Fork:
    """Two patches: a Python fix of op3 and a native fix of op.cc."""
    fork.commit_change(PY_FILE, "return x + 3", "return x - 3", "[Relax] Fix op3")
    fork.commit_change("src/op.cc", "return 1", "return 42", "[Op] Native fix")
    assert fork.run("export") == 0
    return fork


def upstream_moves(fork: Fork, path: str, old: str, new: str, tag: str) -> str:
    up = fork.upstream.repo
    f = up / path
    write(f, f.read_text().replace(old, new))
    git(up, "commit", "-qam", f"upstream change to {path}")
    git(up, "tag", tag)
    return git(up, "rev-parse", "HEAD")


def test_stage_makes_a_branch_and_a_bundle(two: Fork, tmp_path) -> None:
    series = seriesmod.load(two.root / "patches")
    bundle = stage(series, "native-fix", two.checkout, tmp_path / "out", None, _ruff)
    assert two.tvm("rev-parse", f"{bundle.head}^") == two.upstream.commit  # alone on the pin
    assert "return 42" in two.tvm("show", f"{bundle.branch}:src/op.cc")
    assert "return x - 3" not in two.tvm("show", f"{bundle.branch}:{PY_FILE}")
    assert (bundle.dir / "title.txt").read_text() == "[Op] Native fix\n"
    body = (bundle.dir / "body.md").read_text()
    assert "Why this change." in body
    # the reproduction comes from the patches page, the upstream issue as it is; nothing
    # points into this repository
    assert "### Reproduction\n\nWhat it fixes." in body and "- apache/tvm#1" in body
    assert "patches/README.md" not in body and "Upstream-Status" not in body
    staged = (bundle.dir / "native-fix.patch").read_text()
    series_patch = (two.root / "patches/native-fix.patch").read_text()
    assert "Why this change." in staged
    for trailer in ("Fixes:", "Upstream-Status:", "Regression-Test:"):
        assert trailer in series_patch and trailer not in staged
    assert staged[staged.index("diff --git") :] == series_patch[series_patch.index("diff --git") :]
    assert git(two.upstream.repo, "branch", "--list", "tvmfork/*") == ""  # nothing pushed


def test_stage_authors_and_signs_off_from_settings(two: Fork, tmp_path: Path) -> None:
    """By default the staged commit keeps the patch's author and has no trailer; the
    settings' `stage.author` and `stage.signoff` give the author and a Signed-off-by line;
    the settings refuse an author that is not `Name <email>`."""
    from tvmfork import settings

    series = seriesmod.load(two.root / "patches")
    bundle = stage(series, "native-fix", two.checkout, tmp_path / "out", None, _ruff)
    assert two.tvm("log", "-1", "--format=%an <%ae>", bundle.head) == "dev <dev@example.com>"
    assert "Signed-off-by" not in two.tvm("log", "-1", "--format=%B", bundle.head)
    me = "Ada Lovelace <ada@example.org>"
    bundle = stage(series, "native-fix", two.checkout, tmp_path / "out", None, _ruff, me, True)
    assert two.tvm("log", "-1", "--format=%an <%ae>", bundle.head) == me
    message = two.tvm("log", "-1", "--format=%B", bundle.head).strip()
    assert message.endswith(f"Why this change.\n\nSigned-off-by: {me}"), message
    assert f"Signed-off-by: {me}" in (bundle.dir / "native-fix.patch").read_text()
    (two.root / "tvmfork.local.toml").write_text(
        (two.root / "tvmfork.local.toml").read_text() + '[stage]\nauthor = "ada"\n'
    )
    with pytest.raises(settings.UsageError, match=r"stage\.author must read"):
        settings.load(two.root, {})


def test_stage_with_dependency_and_license_check(two: Fork, tmp_path) -> None:
    two.commit_change("src/new.cc", "", "int f();\n", "[Op] New file")
    two.tvm(
        "commit",
        "--amend",
        "-qm",
        "[Op] New file\n\nWhy.\n\nFixes: apache/tvm#2\nUpstream-Status: pending\n"
        "Regression-Test: tests/regression/test_example.py\nDepends-On: native-fix",
    )
    assert two.run("export") == 0
    series = seriesmod.load(two.root / "patches")
    bundle = stage(series, "new-file", two.checkout, tmp_path / "out", None, _ruff)
    assert "return 42" in two.tvm("show", f"{bundle.branch}:src/op.cc")  # the dependency
    assert ("ASF header", "src/new.cc", "MISSING") in bundle.checks
    assert not bundle.ok
    assert two.run("stage", "new-file") == 8  # failing checks: the exit code says so


TVM_PRE_COMMIT = """
repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.12.3
    hooks:
      - id: ruff-check
  # ---------- C/C++: clang-format ----------
  - repo: https://github.com/pre-commit/mirrors-clang-format
    rev: "v20.1.8"
    hooks:
      - id: clang-format
  - repo: https://github.com/MarcoGorelli/cython-lint
    rev: v0.16.7
"""


def test_linter_versions_come_from_upstreams_pre_commit_config() -> None:
    assert pinned_linters(TVM_PRE_COMMIT) == {"ruff": "0.12.3", "clang-format": "20.1.8"}


def test_a_skipped_check_means_not_ready(two: Fork, tmp_path: Path) -> None:
    series = seriesmod.load(two.root / "patches")
    bundle = stage(series, "fix-op3", two.checkout, tmp_path / "out", None, _none)
    assert (
        "ruff",
        PY_FILE,
        "skipped: no ruff: no .pre-commit-config.yaml upstream: linter versions unknown",
    ) in bundle.checks
    assert not bundle.ok
    bundle = stage(series, "fix-op3", two.checkout, tmp_path / "out", None, _ruff)
    assert [name for name, _, _ in bundle.checks] == ["ruff check", "ruff format"]
    assert bundle.ok == all(result == "ok" for _, _, result in bundle.checks)


def test_stage_onto_a_newer_upstream(two: Fork, tmp_path: Path) -> None:
    """Upstream main moved next to the patched lines: the patch stages onto it with a 3-way
    merge, alone."""
    up = two.upstream.repo
    write(up / "src/extra.cc", "int extra() { return 0; }\n")
    git(up, "add", "-A")
    git(up, "commit", "-qm", "upstream main moves on")
    main = git(up, "rev-parse", "HEAD")
    two.tvm("fetch", "-q", str(up), "main")
    series = seriesmod.load(two.root / "patches")
    bundle = stage(series, "native-fix", two.checkout, tmp_path / "out", main, _ruff)
    assert two.tvm("rev-parse", f"{bundle.head}^") == main
    assert "return 42" in two.tvm("show", f"{bundle.branch}:src/op.cc")
    assert "return x - 3" not in two.tvm("show", f"{bundle.branch}:{PY_FILE}")


def test_roll_clean(two: Fork) -> None:
    new = upstream_moves(two, "tests/python/test_op.py", "pass", "assert True", "v1.1.0")
    assert two.run("roll", "--to", "v1.1.0", "--source", str(two.upstream.repo)) == 0
    lock = tomllib.loads((two.root / "patches/lock.toml").read_text())
    assert lock["upstream"]["commit"] == new and lock["upstream"]["tag"] == "v1.1.0"
    assert lock["upstream"]["version"] == "1.1.0"
    assert two.tvm("rev-parse", "refs/tvmfork/base") == new
    assert two.run("export", "--check") == 0  # the checkout carries the rolled series
    assert two.run("check") == 0


def test_roll_to_an_abbreviated_commit_of_a_local_source(two: Fork) -> None:
    """A remote serves whole commit ids only; a local git source expands a short one."""
    new = upstream_moves(two, "tests/python/test_op.py", "pass", "assert True", "v1.1.0")
    up = str(two.upstream.repo)
    assert roll.resolve(gitmod.Repo(two.checkout), new[:10], up) == new
    assert two.run("roll", "--to", new[:10], "--source", up, "--dry-run") == 0


def test_roll_three_way_and_upstream_took_a_patch(two: Fork) -> None:
    up = two.upstream.repo
    # Upstream takes the native fix and edits near the Python fix (3-way needed).
    write(up / "src/op.cc", "int op() { return 42; }\n")
    write(
        up / PY_FILE,
        (up / PY_FILE)
        .read_text()
        .replace("def op2(x)", "def op2(y)")
        .replace("return x + 2", "return y + 2"),
    )
    git(up, "commit", "-qam", "upstream moves on")
    git(up, "tag", "v1.2.0")
    series = seriesmod.load(two.root / "patches")
    result = roll.roll(series, two.checkout, "v1.2.0", str(up))
    statuses = {r.patch: r.status for r in result.rows}
    assert statuses["native-fix.patch"] == roll.UPSTREAM
    assert statuses["fix-op3.patch"] in (roll.CLEAN, roll.THREE_WAY)
    assert two.run("roll", "--to", "v1.2.0", "--source", str(up)) == 0
    assert seriesmod.read_order(two.root / "patches") == ["fix-op3.patch"]
    assert not (two.root / "patches/native-fix.patch").exists()


def test_roll_conflict_changes_nothing(two: Fork, capsys) -> None:
    upstream_moves(two, PY_FILE, "return x + 3", "return x * 3", "v2.0.0")
    before = {p.name: p.read_bytes() for p in (two.root / "patches").iterdir()}
    head = two.tvm("rev-parse", "HEAD")
    assert two.run("roll", "--to", "v2.0.0", "--source", str(two.upstream.repo)) == 5
    out = capsys.readouterr().out
    assert "CONFLICT" in out and f"conflict in {PY_FILE}" in out and "hunk " in out
    assert {p.name: p.read_bytes() for p in (two.root / "patches").iterdir()} == before
    assert two.tvm("rev-parse", "HEAD") == head
    assert two.tvm("status", "--porcelain") == ""


def test_roll_writes_its_table_and_status_reads_it_back(two: Fork, capsys) -> None:
    """`roll --dry-run --table docs/proofs/v2.md`, even when a patch conflicts: a page with each
    patch's result, which `tvmfork status` shows as the column "v2" beside the series' facts."""
    upstream_moves(two, PY_FILE, "return x + 3", "return x * 3", "v2.0.0")
    page = two.root / "docs/proofs/v2.md"
    page.parent.mkdir(parents=True)
    args = ("roll", "--to", "v2.0.0", "--dry-run", "--table", str(page))
    assert two.run(*args, "--source", str(two.upstream.repo)) == 5
    text = page.read_text()
    assert "| CONFLICT | 1 |" in text and "| clean | 1 |" in text
    assert f"| `fix-op3` | CONFLICT | {PY_FILE} |" in text
    capsys.readouterr()
    assert two.run("status") == 0
    out = capsys.readouterr().out
    head, _, *rows = out.splitlines()
    assert head.split() == ["patch", "kind", "+/-", "Depends-On", "v2", "staged", "upstream"]
    assert rows[0].split() == ["fix-op3", "python", "+1/-1", "-", "CONFLICT", "-", "pending"]
    assert rows[1].split() == ["native-fix", "native", "+1/-1", "-", "clean", "-", "pending"]
    assert two.run("status", "--write") == 0
    status = (two.root / "docs/status.md").read_text()
    assert "| python | 1 |" in status and "[v2](proofs/v2.md)" in status
    assert "| `native-fix` | native | +1/-1 | - | clean | - | pending |" in status


def test_update_lock_text_keeps_comments() -> None:
    text = (
        '# pin\n[upstream]\nurl = "u"\ntag = "v1"\ncommit = "a"  # c\ntree = "t"\n'
        'version = "1"\n\n[[submodule]]\npath = "p"\ncommit = "s"\n'
    )
    out = roll.update_lock_text(text, "v2.0", "b" * 40, "c" * 40, {"p": "d" * 40})
    assert out.startswith("# pin\n") and f'commit = "{"b" * 40}"  # c' in out
    assert 'tag = "v2.0"' in out and 'version = "2.0"' in out and f'"{"d" * 40}"' in out
