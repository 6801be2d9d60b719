"""`tvmfork checkout`: a TVM checkout at the pin, from a URL, a git directory or a folder.

Every source (the main repository and each submodule, nested ones included) can be
overridden, so an offline or air-gapped machine works from a mirror or an unpacked
archive. A git source is verified by commit; a plain folder of the main repository is
verified by its tree hash (the lock records it); a plain folder for a submodule cannot be
verified and the report says so.
"""

from __future__ import annotations

import configparser
import dataclasses
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tvmfork import git, ui
from tvmfork.errors import SourceError
from tvmfork.lock import Lock

BASE_REF = "refs/tvmfork/base"
WORK_BRANCH = "fork"
FOLDER_DATE = "2000-01-01T00:00:00+0000"


@dataclass(frozen=True)
class Fetched:
    path: str
    source: str
    commit: str
    verified: str


def source_kind(source: str) -> str:
    """`git` (a local work tree or bare repo), `folder`, or `url`."""
    path = Path(source).expanduser()
    if path.exists():
        if git.is_git_dir(path):
            return "git"
        if path.is_dir():
            return "folder"
        raise SourceError(f"{source} is a file, not a repository or a folder")
    if "://" in source or source.startswith("git@") or ":" in source.split("/", 1)[0]:
        return "url"
    raise SourceError(f"no such folder or repository: {source}")


def fetch_url(source: str) -> str:
    path = Path(source).expanduser()
    # file:// so that --depth works for a local repository too.
    return path.resolve().as_uri() if path.exists() else source


def _fetch_git(repo: git.Repo, source: str, commit: str, tag: str | None, shallow: bool) -> None:
    url = fetch_url(source)
    depth = ["--depth=1"] if shallow else []
    if tag:
        r = repo.run("ls-remote", url, f"refs/tags/{tag}", f"refs/tags/{tag}^{{}}", check=False)
        if r.returncode != 0:
            raise SourceError(f"cannot read {source}:\n    {r.stdout.strip()}")
        refs: dict[str, str] = {}
        for line in r.stdout.splitlines():
            sha, _, ref = line.partition("\t")
            refs[ref] = sha
        tagged = refs.get(f"refs/tags/{tag}^{{}}") or refs.get(f"refs/tags/{tag}")
        if tagged and tagged != commit:
            raise SourceError(
                f"tag {tag} in {source} is {tagged}, but the lock pins {commit}; "
                "refusing a source that is not the pin"
            )
    r = repo.run("fetch", "--no-tags", "--no-recurse-submodules", *depth, url, commit, check=False)
    if r.returncode != 0:
        raise SourceError(
            f"commit {commit} could not be fetched from {source}"
            + (f" (pinned as tag {tag})" if tag else "")
            + f":\n    {r.stdout.strip()[-600:]}"
        )
    got = repo.rev("FETCH_HEAD")
    if got != commit:
        raise SourceError(f"{source} gave commit {got}, but the lock pins {commit}")
    repo.run("checkout", "-q", "--detach", commit)


def _owner_and_name(url: str) -> tuple[str, str]:
    """("apache", "tvm-ffi") from https://github.com/apache/tvm-ffi(.git), git@host:o/n, a path."""
    parts = [p for p in url.replace(":", "/").rstrip("/").split("/") if p]
    name = parts[-1].removesuffix(".git") if parts else ""
    owner = parts[-2] if len(parts) > 1 else ""
    return owner, name


def mirror_candidates(mirrors: Path, url: str) -> list[Path]:
    """Where a folder of mirrors may hold the repository of `url`, in the order looked at:
    `owner+name/repo` (the layout of a mirror that fetches by owner and name), `owner+name`,
    `owner/name(.git)`, `name(.git)`."""
    owner, name = _owner_and_name(url)
    if not name:
        return []
    found = [mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}"] if owner else []
    if owner:
        found += [mirrors / owner / name, mirrors / owner / f"{name}.git"]
    return [*found, mirrors / name, mirrors / f"{name}.git"]


@dataclass(frozen=True)
class Mirrors:
    """A folder of mirrors, and a scratch folder (alive for one checkout) into which sources
    found inside its wheels are unpacked."""

    folder: Path
    scratch: Path

    def _from_wheels(self, name: str) -> tuple[Path, str] | None:
        """A folder `<package>/3rdparty/<name>/` inside a wheel of the folder, unpacked
        (apache-tvm-ffi's wheels carry dlpack's headers so; dlpack may have no mirror of its
        own). The newest wheel that has it wins."""
        for wheel in sorted(self.folder.glob("*.whl"), reverse=True):
            try:
                with zipfile.ZipFile(wheel) as zf:
                    marker = f"/3rdparty/{name}/"
                    files = [m for m in zf.namelist() if marker in m and not m.endswith("/")]
                    if not files:
                        continue
                    prefix = files[0][: files[0].index(marker) + len(marker)]
                    dest = self.scratch / name
                    for m in files:
                        if m.startswith(prefix):
                            target = dest / m[len(prefix) :]
                            target.parent.mkdir(parents=True, exist_ok=True)
                            target.write_bytes(zf.read(m))
                    return dest, f"{wheel} ({prefix})"
            except (OSError, zipfile.BadZipFile):
                continue
        return None

    def source_for(self, url: str) -> tuple[str, str] | None:
        """(source, what to report) for `url`: a git directory or a folder named after the
        repository (mirror_candidates), else that folder inside one of the wheels."""
        for cand in mirror_candidates(self.folder, url):
            if cand.is_dir():
                return str(cand), str(cand)
        _, name = _owner_and_name(url)
        found = self._from_wheels(name) if name else None
        return (str(found[0]), found[1]) if found is not None else None


def _gitlinks(repo: git.Repo) -> dict[str, str]:
    text = repo.out("ls-tree", "-r", "HEAD")
    links = {}
    for line in text.splitlines():
        meta, path = line.split("\t", 1)
        _mode, kind, sha = meta.split()
        if kind == "commit":
            links[path] = sha
    return links


def _gitmodule_urls(root: Path) -> dict[str, str]:
    cfg = configparser.ConfigParser()
    f = root / ".gitmodules"
    if f.is_file():
        cfg.read_string(f.read_text())
    return {
        cfg[s]["path"]: cfg[s].get("url", "")
        for s in cfg.sections()
        if s.startswith("submodule ") and "path" in cfg[s]
    }


def _copy_folder(src: Path, dest: Path) -> None:
    shutil.copytree(
        src, dest, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git")
    )


def _materialize_folder_base(dest: Path, source: str, lock: Lock) -> None:
    """A plain folder becomes a one-commit repo whose tree must equal the pin's tree."""
    repo = git.Repo(dest)
    _copy_folder(Path(source).expanduser(), dest)
    links = {s.path: s.commit for s in lock.submodules}
    excludes = [f":(exclude){p}" for p in links]
    repo.run("add", "-A", "--", ".", *excludes)
    for path, sha in links.items():
        repo.run("update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
    tree = repo.out("write-tree")
    if tree != lock.tree:
        raise SourceError(
            f"the folder {source} has tree {tree}, but the pin ({lock.tag}, {lock.commit}) has "
            f"tree {lock.tree}: it is not an unmodified copy of the pin"
        )
    env = {**git.identity_env(), "GIT_AUTHOR_DATE": FOLDER_DATE, "GIT_COMMITTER_DATE": FOLDER_DATE}
    repo.run(
        "commit", "-q", "-m", f"upstream {lock.tag} ({lock.commit}) from a plain folder", env=env
    )


def _checkout_submodules(
    root: Path,
    prefix: str,
    overrides: dict[str, str],
    only: set[str] | None,
    shallow: bool,
    report: list[Fetched],
    mirrors: Mirrors | None = None,
) -> None:
    repo = git.Repo(root)
    urls = _gitmodule_urls(root)
    for path, commit in sorted(_gitlinks(repo).items()):
        full = prefix + path
        if only is not None and full not in only:
            continue
        source = overrides.get(full)
        shown = source
        if source is None and mirrors is not None and urls.get(path):
            source, shown = mirrors.source_for(urls[path]) or (None, None)
        dest = root / path
        if source is None and dest.is_dir() and any(dest.iterdir()):
            # Came with a plain-folder source (an unpacked release archive, say).
            report.append(Fetched(full, "(inside the folder)", commit, "unverified"))
            continue
        if source is None and mirrors is not None and urls.get(path):
            looked = ", ".join(str(p) for p in mirror_candidates(mirrors.folder, urls[path]))
            ui.note(f"    {full} is not among the mirrors (looked for {looked}, and in wheels)")
        source = source or urls.get(path)
        if not source:
            raise SourceError(f"submodule {full} has no URL; pass --submodule {full}=SOURCE")
        shown = shown or source
        with ui.step(f"submodule {full} from {shown}"):
            fetched = _materialize(dest, full, source, commit, None, shallow)
            report.append(dataclasses.replace(fetched, source=shown))
        if report[-1].verified != "unverified":
            # Nested submodules of a fetched one are all needed by it.
            _checkout_submodules(dest, full + "/", overrides, None, shallow, report, mirrors)


def _materialize(
    dest: Path, label: str, source: str, commit: str, tag: str | None, shallow: bool
) -> Fetched:
    kind = source_kind(source)
    dest.mkdir(parents=True, exist_ok=True)
    if kind == "folder":
        _copy_folder(Path(source).expanduser(), dest)
        return Fetched(label, source, commit, "unverified")
    repo = git.Repo(dest)
    repo.run("init", "-q")
    _fetch_git(repo, source, commit, tag, shallow)
    return Fetched(label, source, commit, "commit")


def checkout(
    lock: Lock,
    dest: Path,
    source: str | None = None,
    overrides: dict[str, str] | None = None,
    submodules: str = "required",
    shallow: bool = True,
    mirrors: Path | None = None,
) -> list[Fetched]:
    """Create `dest` at the pin. `submodules`: `required`, `all` or `none`. `mirrors`, a
    folder of mirrors, gives every source that `source` and `overrides` do not (Mirrors.source_for);
    what it lacks comes from its URL."""
    if mirrors is not None and not mirrors.is_dir():
        raise SourceError(f"no such folder of mirrors: {mirrors}")
    overrides = dict(overrides or {})
    unknown = [
        p
        for p in overrides
        if not any(p == s.path or p.startswith(s.path + "/") for s in lock.submodules)
    ]
    if unknown:
        known = ", ".join(s.path for s in lock.submodules)
        raise SourceError(f"no submodule {', '.join(unknown)} in the lock (known: {known})")
    if dest.exists() and any(dest.iterdir()):
        raise SourceError(
            f"{dest} exists and is not empty; remove it or choose another --dest "
            "(an existing checkout is never overwritten)"
        )
    if source is None and mirrors is not None:
        for cand in mirror_candidates(mirrors, lock.url):
            if cand.is_dir():
                source = str(cand)
                break
        else:
            raise SourceError(
                f"TVM is not in the folder of mirrors {mirrors}: looked for "
                + ", ".join(str(p) for p in mirror_candidates(mirrors, lock.url))
            )
    source = source or lock.url
    report: list[Fetched] = []
    dest.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.TemporaryDirectory(prefix="tvmfork-mirrors-")
    found = Mirrors(mirrors, Path(scratch.name)) if mirrors is not None else None
    try:
        with ui.step(f"TVM {lock.tag} from {source}"):
            if source_kind(source) == "folder":
                git.Repo(dest).run("init", "-q")
                _materialize_folder_base(dest, source, lock)
                report.append(Fetched(".", source, lock.commit, "tree"))
            else:
                report.append(_materialize(dest, ".", source, lock.commit, lock.tag, shallow))
        repo = git.Repo(dest)
        base = repo.head()
        repo.run("update-ref", BASE_REF, base)
        repo.run("checkout", "-q", "-B", WORK_BRANCH, base)
        if submodules != "none":
            only = None if submodules == "all" else {s.path for s in lock.submodules if s.required}
            _checkout_submodules(dest, "", overrides, only, shallow, report, found)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    finally:
        scratch.cleanup()
    return report


def base_of(repo: git.Repo) -> str:
    base = repo.rev(BASE_REF)
    if base is None:
        raise SourceError(
            f"{repo.path} is not a tvmfork checkout (no {BASE_REF}); create one with "
            "`tvmfork checkout`"
        )
    return base
