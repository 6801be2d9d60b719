"""Overlay mode: the stock wheel plus the series' Python hunks, repacked in seconds.

Source paths `python/tvm/X` are wheel paths `tvm/X` (BUGS.md: the stock wheel carries the
tag's `python/tvm` file for file). Hunks are applied with `git apply` in a scratch folder laid
out like the source tree, so the patches themselves are never rewritten.
"""

from __future__ import annotations

import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import parse_wheel_filename

from tvmfork import hunks, manifest, proc
from tvmfork.errors import PatchError, UsageError
from tvmfork.lock import Lock
from tvmfork.series import SHIPPED_PREFIX, Patch, Series
from tvmfork.wheel import repack

WHEEL_PREFIX = "tvm/"


def to_wheel_path(source_path: str) -> str:
    return WHEEL_PREFIX + source_path[len(SHIPPED_PREFIX) :]


def patched_files(stock: zipfile.ZipFile, patches: list[Patch]) -> dict[str, bytes | None]:
    """Wheel path -> new content (None: deleted) after the patches' Python hunks, in order.
    A file with CRLF line ends (upstream's Windows wheel has them) is patched on an LF copy
    and keeps its CRLF; a new file gets CRLF when the files it was patched beside had them."""
    touched = sorted({f for p in patches for f in p.python_files})
    if not touched:
        return {}
    names = set(stock.namelist())
    crlf: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="tvmfork-overlay-") as tmp:
        root = Path(tmp)
        for src in touched:
            wheel_path = to_wheel_path(src)
            if wheel_path in names:
                target = root / src
                target.parent.mkdir(parents=True, exist_ok=True)
                data = stock.read(wheel_path)
                if b"\r\n" in data:
                    crlf.add(src)
                    data = data.replace(b"\r\n", b"\n")
                target.write_bytes(data)
        env = {"GIT_CEILING_DIRECTORIES": str(root.parent)}
        for p in patches:
            if not p.python_files:
                continue
            hunks.refuse_misplaced(root, p, only=SHIPPED_PREFIX)
            r = proc.run(
                ["git", "apply", "--verbose", f"--include={SHIPPED_PREFIX}*", p.path.resolve()],
                cwd=root,
                env=env,
                check=False,
            )
            if r.returncode != 0:
                raise PatchError(
                    f"the Python hunks of {p.name} do not apply to the stock wheel's files:\n"
                    + "\n".join("    " + ln for ln in r.stdout.strip().splitlines()[-12:])
                )
        out: dict[str, bytes | None] = {}
        for src in touched:
            target = root / src
            patched = target.read_bytes() if target.is_file() else None
            new = to_wheel_path(src) not in names
            if patched is not None and (src in crlf or (new and crlf)):
                patched = patched.replace(b"\n", b"\r\n")
            out[to_wheel_path(src)] = patched
        return out


def applicable(series: Series, wheel: Path) -> tuple[list[Patch], dict[str, str]]:
    """The Python patches of `series` that apply, in order, to `wheel` (another release's, or
    the stock one); and why each other patch is left out."""
    chosen: list[Patch] = []
    left_out: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as zf:
        for p in series.patches:
            why = series.needs_build(p)
            missing = [d.name for d in series.dependencies(p) if d.name in left_out]
            if not why and missing:
                why = f"its Depends-On {', '.join(missing)} is left out"
            if why:
                left_out[p.name] = why
                continue
            try:
                patched_files(zf, [*chosen, p])
                chosen.append(p)
            except PatchError:
                left_out[p.name] = f"does not apply to {wheel.name}: rebase it (tvmfork roll)"
    return chosen, left_out


@dataclass(frozen=True)
class OverlayResult:
    path: Path
    version: str
    included: list[str]
    left_out: list[str]
    platform: str  # the stock wheel's platform tags: manylinux_2_27_aarch64.manylinux_2_28_aarch64


def local_version(base: str, series: Series, python_only_cut: bool) -> str:
    return f"{base}+fork.{series.digest[:10]}" + (".py" if python_only_cut else "")


def _rewrite_version_py(text: str, version: str) -> str:
    return re.sub(
        r"(?m)^__version__ = version = [^\r\n]*",
        f"__version__ = version = {version!r}",
        text,
        count=1,
    )


def build(
    lock: Lock,
    series: Series,
    stock_path: Path,
    out_dir: Path,
    python_only: bool = False,
    only: list[Patch] | None = None,
) -> OverlayResult:
    """Overlay the series' Python patches (or just `only`, for another release's wheel) on
    the stock wheel at `stock_path`; the version is that wheel's plus the series' local
    part, with `.py` when any patch is left out. The lock's tvm-ffi bound is the pin's
    library's: another release's wheel (`only` given) keeps its own requirement."""
    native = [p for p in series.patches if series.needs_build(p)]
    if native and not python_only and only is None:
        names = ", ".join(p.name for p in native)
        raise UsageError(
            f"the series has native patches ({names}); an overlay cannot carry them. Build "
            "from source (--mode source) or pass --python-only to leave them out"
        )
    included = only if only is not None else [p for p in series.patches if p not in native]
    left_out = [p for p in series.patches if p not in included]
    _, base_version, _, tags = parse_wheel_filename(stock_path.name)
    platform = ".".join(sorted({t.platform for t in tags}))
    version = local_version(str(base_version), series, python_only_cut=bool(left_out))
    out_path = out_dir / repack.out_name(stock_path, version)
    meta = repack.dist_info(stock_path) + "METADATA"

    with zipfile.ZipFile(stock_path) as stock:
        changed = patched_files(stock, included)
        metadata = stock.read(meta).decode()
        ffi_req = lock.tvm_ffi_requirement if only is None else None
        man = manifest.build(
            lock,
            series,
            {p.name for p in included},
            version=version,
            mode="overlay",
            variant="stock-binary",
            extra={"base_wheel": stock_path.name, "platform": {"tag": platform}},
            ffi_requirement=ffi_req or repack.ffi_requirement(metadata),
        )
        changed[manifest.MANIFEST_PATH] = manifest.dumps(man)
        version_py = WHEEL_PREFIX + "_version.py"
        if version_py in stock.namelist():
            changed[version_py] = _rewrite_version_py(
                stock.read(version_py).decode(), version
            ).encode()
        changed[meta] = repack.rewrite_metadata(metadata, version, ffi_req).encode()
    repack.repack(stock_path, out_path, changed, version)
    return OverlayResult(
        path=out_path,
        version=version,
        included=[p.name for p in included],
        left_out=[p.name for p in left_out],
        platform=platform,
    )
