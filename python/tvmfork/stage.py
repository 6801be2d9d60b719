"""`tvmfork stage PATCH`: one patch as a ready upstream pull request. Nothing is pushed.

In the checkout, branch `tvmfork/stage/<name>` holds the patch alone (after the patches it
declares in `Depends-On:` trailers) on the pin, or on `--onto REV`, applied with a 3-way
merge. The bundle in `out/stage/<name>/` has the patch, a title, a body written from the
commit message, and the results of TVM's own checks on the files it touches.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tvmfork import fixes, git, proc
from tvmfork.checkout import base_of
from tvmfork.errors import PatchError
from tvmfork.patchflow import am, format_commit
from tvmfork.series import REQUIRED_TRAILERS, Patch, Series, classify

ASF_HEADER = "Licensed to the Apache Software Foundation (ASF)"
BRANCH_PREFIX = "tvmfork/stage/"


@dataclass(frozen=True)
class Bundle:
    branch: str
    head: str
    dir: Path
    checks: list[tuple[str, str, str]]  # (check, file, result)

    @property
    def ok(self) -> bool:
        """Ready: every check ran and passed (a skipped check proves nothing)."""
        return all(result.startswith("ok") for _, _, result in self.checks)


def _description(patch: Patch) -> str:
    """The message without subject and trailers."""
    body = patch.message.split("\n\n")
    if body and all(
        re.match(r"^[A-Za-z][A-Za-z0-9-]*:\s", ln) for ln in body[-1].splitlines() if ln.strip()
    ):
        body = body[:-1]
    return "\n\n".join(body).strip()


def _added_tests(patch: Patch) -> list[str]:
    tests: list[str] = []
    current = ""
    for line in patch.data.decode("utf-8", "replace").splitlines():
        if line.startswith("diff --git "):
            current = line.rsplit(" b/", 1)[-1]
        m = re.match(r"^\+\s*def (test_\w+)", line)
        if m and classify(current) == "test":
            tests.append(f"{current}::{m.group(1)}")
    return tests


def fixes_of(patch: Patch, repo_root: Path) -> tuple[list[str], list[str]]:
    """(upstream references, the text of this repository's sections) of the `Fixes:`
    trailers: issues and URLs go into the pull request as they are; a section
    (patches/README.md#name) gives its text, the bug and the reproduction, without the
    fork's bookkeeping (its upstream and status paragraph: the references are listed apart)."""
    upstream, sections = [], []
    for ref in fixes.refs(patch.trailers.get("Fixes", [])):
        if ref.upstream:
            upstream.append(ref.text)
        elif (repo_root / ref.path).is_file():
            text = fixes.section(repo_root / ref.path, ref.anchor)
            paragraphs = [p for p in text.split("\n\n") if p.strip()]
            kept = "\n\n".join(p for p in paragraphs if not p.startswith("**Upstream.**"))
            if kept:
                sections.append(kept)
    return upstream, sections


def body(
    patch: Patch, deps: list[Patch], checks: list[tuple[str, str, str]], repo_root: Path
) -> str:
    lines = [_description(patch), ""]
    refs, sections = fixes_of(patch, repo_root)
    if sections:
        lines += ["### Reproduction", "", *sections, ""]
    tests = _added_tests(patch)
    lines.append("### Tests")
    lines += [f"- `{t}`" for t in tests] or ["- (this patch adds no test functions)"]
    lines.append("")
    if refs:
        lines += ["### Fixes", *[f"- {f}" for f in refs], ""]
    if deps:
        lines += ["### Depends on", *[f"- {d.subject}" for d in deps], ""]
    lines.append("### Checks")
    lines += [f"- {name} `{file}`: {result}" for name, file, result in checks]
    return "\n".join(lines).rstrip() + "\n"


def upstream_message(patch: Patch, signoff: str = "") -> str:
    """The commit message for upstream: subject and description, the fork's trailers
    dropped; `signoff` (`Name <email>`) as its only trailer."""
    text = f"{patch.subject}\n\n{_description(patch)}\n"
    return text + (f"\nSigned-off-by: {signoff}\n" if signoff else "")


# The pre-commit hooks whose versions upstream pins, and the PyPI package of each tool.
LINTERS = {
    "ruff": ("astral-sh/ruff-pre-commit", "ruff"),
    "clang-format": ("pre-commit/mirrors-clang-format", "clang-format"),
}


def pinned_linters(config: str) -> dict[str, str]:
    """{tool: version} of the LINTERS that a .pre-commit-config.yaml pins (`rev: v0.12.3`)."""
    found: dict[str, str] = {}
    current = None
    for line in config.splitlines():
        repo = re.match(r"^\s*-\s*repo:\s*(\S+)", line)
        if repo:
            current = next((t for t, (r, _) in LINTERS.items() if repo.group(1).endswith(r)), None)
            continue
        rev = re.match(r"^\s*rev:\s*[\"']?v?([0-9][^\"'\s]*)", line)
        if rev and current:
            found[current] = rev.group(1)
            current = None
    return found


def upstream_linters(
    cache_dir: Path, python: str
) -> Callable[[git.Repo], tuple[dict[str, list[str]], str]]:
    """For `stage`: upstream's own ruff and clang-format, at the versions the staged tree's
    pre-commit config pins, installed into a tool venv of the cache."""
    from tvmfork import ui, venvs

    def linters(wt: git.Repo) -> tuple[dict[str, list[str]], str]:
        reqs, note = linter_requirements(wt)
        if not reqs:
            return {}, note
        venv = cache_dir / "venvs" / f"lint-{venvs.key(*reqs)}"
        venvs.ensure(venv, reqs, python=python)
        ui.note(f"upstream's linters: {', '.join(reqs)}")
        pinned = {r.split("==")[0] for r in reqs}
        return {
            t: [str(venv / "bin" / t)] for t, (_, pkg) in LINTERS.items() if pkg in pinned
        }, note

    return linters


def linter_requirements(wt: git.Repo) -> tuple[list[str], str]:
    """PyPI requirements for upstream's own linters at the versions its pre-commit config pins
    in `wt`, and a note when it pins none."""
    config = wt.path / ".pre-commit-config.yaml"
    if not config.is_file():
        return [], "no .pre-commit-config.yaml upstream: linter versions unknown"
    pins = pinned_linters(config.read_text())
    reqs = [f"{LINTERS[t][1]}=={v}" for t, v in sorted(pins.items())]
    missing = sorted(set(LINTERS) - set(pins))
    return reqs, f"{config.name} pins no {', '.join(missing)}" if missing else ""


def run_checks(
    wt: git.Repo, base: str, linters: dict[str, list[str]], why_not: str = ""
) -> list[tuple[str, str, str]]:
    """TVM's checks on the files the staged commits touch, as its CI lints them: the ASF
    header on new files, and `linters` (tool name -> command; upstream's pinned ruff and
    clang-format). A linter that is not there is reported as skipped, with `why_not`."""
    results = []
    changed = wt.out("diff", "--name-only", "--diff-filter=AM", base, "HEAD").split()
    added = set(wt.out("diff", "--name-only", "--diff-filter=A", base, "HEAD").split())
    ruff, clang_format = linters.get("ruff"), linters.get("clang-format")
    why = f": {why_not}" if why_not else ""
    for f in changed:
        path = wt.path / f
        source = f.endswith((".py", ".cc", ".h", ".cmake", ".sh")) or f.endswith("CMakeLists.txt")
        if f in added and source:
            ok = ASF_HEADER in path.read_text(errors="replace")[:2000]
            results.append(("ASF header", f, "ok" if ok else "MISSING"))
        if f.endswith(".py"):
            if ruff is None:
                results.append(("ruff", f, f"skipped: no ruff{why}"))
                continue
            for args, name in (
                (["check", "--quiet"], "ruff check"),
                (["format", "--check", "--quiet"], "ruff format"),
            ):
                r = proc.run([*ruff, *args, f], cwd=wt.path, check=False)
                detail = r.stdout.strip().replace("\n", " ")[:300]
                results.append((name, f, "ok" if r.returncode == 0 else f"FAILED: {detail}"))
        elif f.endswith((".cc", ".h")):
            if clang_format is None:
                results.append(("clang-format", f, f"skipped: no clang-format{why}"))
                continue
            r = proc.run([*clang_format, "--dry-run", "--Werror", f], cwd=wt.path, check=False)
            results.append(("clang-format", f, "ok" if r.returncode == 0 else "FAILED"))
    return results


def _slug(name: str) -> str:
    return name.removesuffix(".patch")


def stage(
    series: Series,
    name: str,
    checkout: Path,
    out_dir: Path,
    onto: str | None,
    linters: Callable[[git.Repo], tuple[dict[str, list[str]], str]],
    author: str = "",
    signoff: bool = False,
) -> Bundle:
    """Stage `name` (after its dependencies) on the pin or `onto`; its commit carries the
    message upstream sees (no fork trailers), authored by `author` (`Name <email>`; default
    the patch's own) and signed off by them with `signoff`, and the bundle the pull request.
    `linters` gives, for the staged tree, the lint commands to run and why any is missing."""
    patch = series.get(name)
    for key in REQUIRED_TRAILERS:
        if not patch.trailer(key):
            raise PatchError(f"{patch.name} has no {key}: trailer; `tvmfork check` first")
    deps = series.dependencies(patch)
    repo = git.Repo(checkout)
    base = repo.rev(onto) if onto else base_of(repo)
    if base is None:
        raise PatchError(f"{onto} is not a commit in {checkout}; fetch it there first")
    branch = BRANCH_PREFIX + _slug(patch.name)
    with git.worktree(repo, base) as wt:
        for p in [*deps, patch]:
            am(wt, p, three_way=onto is not None)
        if not author:
            author = wt.run("log", "-1", "--format=%an <%ae>").stdout.strip()
        message = upstream_message(patch, author if signoff else "")
        wt.run(
            "commit",
            "-q",
            "--amend",
            f"--author={author}",
            "-F",
            "-",
            input=message,
            env=git.COMMITTER,
        )
        head = wt.head()
        tools, why_not = linters(wt)
        checks = run_checks(wt, base, tools, why_not)
    repo.run("branch", "-f", branch, head)
    bundle = out_dir / "stage" / _slug(patch.name)
    if bundle.exists():
        shutil.rmtree(bundle)
    bundle.mkdir(parents=True)
    (bundle / patch.name).write_bytes(format_commit(repo, head))
    (bundle / "title.txt").write_text(patch.subject + "\n")
    (bundle / "body.md").write_text(body(patch, deps, checks, series.dir.parent))
    (bundle / "checks.txt").write_text(
        "".join(f"{name}\t{file}\t{result}\n" for name, file, result in checks)
    )
    return Bundle(branch=branch, head=head, dir=bundle, checks=checks)
