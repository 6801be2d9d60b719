"""The stock PyPI wheel named in the lock: found in the cache or downloaded, always verified."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename

from tvmfork import proc, ui
from tvmfork.errors import IntegrityError, UsageError
from tvmfork.lock import Lock, WheelFile


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def best_fit(lock: Lock) -> WheelFile | None:
    """The lock's wheel file that best fits this interpreter and platform, if one does."""
    ranked = {str(t): i for i, t in enumerate(sys_tags())}
    best: tuple[int, WheelFile] | None = None
    for wf in lock.wheel_files:
        _, _, _, tags = parse_wheel_filename(wf.filename)
        score = min((ranked[str(t)] for t in tags if str(t) in ranked), default=None)
        if score is not None and (best is None or score < best[0]):
            best = (score, wf)
    return best[1] if best else None


def platform_name(wf: WheelFile) -> str:
    """The wheel's platform, short: linux_x86_64, linux_aarch64, macosx_arm64, win_amd64
    (a manylinux or macOS tag less its version), or the tag itself."""
    plat = min(str(t.platform) for t in parse_wheel_filename(wf.filename)[3])
    m = re.fullmatch(r"(manylinux|musllinux|macosx)(?:_\d+_\d+|\d+|1)?_(\w+)", plat)
    if not m:
        return plat
    return f"{'linux' if m.group(1) == 'manylinux' else m.group(1)}_{m.group(2)}"


def platform_tags(wf: WheelFile) -> list[str]:
    """The platform tags of the wheel's name, for `pip download --platform`."""
    return sorted({str(t.platform) for t in parse_wheel_filename(wf.filename)[3]})


def select(lock: Lock, platform: str) -> list[WheelFile]:
    """The lock's stock wheels for `platform`: "" this machine's, "all" each one, else the one
    whose `platform_name` it is."""
    if not platform:
        return [pick(lock)]
    if platform == "all":
        return list(lock.wheel_files)
    found = [wf for wf in lock.wheel_files if platform_name(wf) == platform]
    if not found:
        names = ", ".join(sorted(platform_name(wf) for wf in lock.wheel_files))
        raise UsageError(
            f"platform {platform!r}: the lock's stock wheels are for {names} (or give all)"
        )
    return found


def pick(lock: Lock) -> WheelFile:
    """The lock's wheel file that best fits this interpreter and platform."""
    wf = best_fit(lock)
    if wf is None:
        names = ", ".join(w.filename for w in lock.wheel_files)
        raise UsageError(f"none of the stock wheels in the lock fits this platform: {names}")
    return wf


def cached(lock: Lock, cache_dir: Path, local: Path | None = None) -> Path | None:
    """The stock wheel already here (`local`, or the cache's), without downloading; None when
    there is none (or none fits this platform)."""
    if local:
        return local
    wf = best_fit(lock)
    path = cache_dir / "wheels" / wf.filename if wf else None
    return path if path is not None and path.is_file() else None


def verify(path: Path, expected: WheelFile) -> None:
    got = sha256_of(path)
    if got != expected.sha256:
        raise IntegrityError(
            f"{path} has sha256 {got}, but the lock records {expected.sha256} for "
            f"{expected.filename}; the file is corrupt or not the stock wheel. Delete it and "
            "run again to download it afresh."
        )


def fetch(
    lock: Lock, cache_dir: Path, local: Path | None = None, wanted: WheelFile | None = None
) -> tuple[Path, WheelFile]:
    """Path to a verified stock wheel: `local` if given, else cached, else downloaded. The
    wheel is `wanted` (any platform the lock names), by default the one for this machine."""
    if local is not None:
        if not local.is_file():
            raise UsageError(f"stock wheel {local} does not exist")
        expected = lock.wheel_file(local.name)
        if expected is None:
            raise UsageError(f"{local.name} is not one of the stock wheels named in the lock")
        if wanted is not None and wanted != expected:
            raise UsageError(
                f"the local stock wheel {local.name} is not the {platform_name(wanted)} one "
                f"({wanted.filename})"
            )
        verify(local, expected)
        return local, expected
    expected = wanted or pick(lock)
    wheels = cache_dir / "wheels"
    path = wheels / expected.filename
    if not path.is_file():
        wheels.mkdir(parents=True, exist_ok=True)
        version = parse_wheel_filename(expected.filename)[1]
        with ui.step(f"download {expected.filename}"):
            proc.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary",
                    ":all:",
                    "--dest",
                    wheels,
                    *(f"--platform={tag}" for tag in platform_tags(expected)),
                    f"{lock.wheel_project}=={version}",
                ],
                echo=True,
            )
        if not path.is_file():
            raise IntegrityError(f"pip did not produce {expected.filename} in {wheels}")
    verify(path, expected)
    return path, expected


def download(spec: str, dest: Path, python: str = "", platform: str = "") -> Path:
    """The wheel pip picks for `spec` (e.g. apache-tvm==0.27.0.post1), cached in `dest`; for
    another Python (`python`, e.g. 3.12) and platform tag (`platform`) where given."""
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.glob("*.whl"))
    r = proc.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--dest",
            dest,
            *(["--python-version", python, "--implementation", "cp"] if python else []),
            *([f"--platform={platform}"] if platform else []),
            spec,
        ],
        check=False,
    )
    if r.returncode != 0:
        raise UsageError(f"pip cannot download {spec}:\n    {r.stdout.strip()[-600:]}")
    named = re.findall(r"(?:Saved|File was already downloaded) (\S+\.whl)", r.stdout)
    if named:
        return Path(named[-1]).resolve()
    new = set(dest.glob("*.whl")) - before
    if len(new) == 1:
        return new.pop()
    raise UsageError(f"cannot tell which wheel pip downloaded for {spec}:\n{r.stdout[-600:]}")
