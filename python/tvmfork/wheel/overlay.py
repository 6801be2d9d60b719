"""Overlay mode: the stock wheel plus the series' Python hunks, repacked in seconds.

Source paths `python/tvm/X` are wheel paths `tvm/X` (BUGS.md: the stock wheel carries the
tag's `python/tvm` file for file). Hunks are applied with `git apply` in a scratch folder laid
out like the source tree, so the patches themselves are never rewritten.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import parse_wheel_filename

from tvmfork import manifest, proc
from tvmfork.errors import PatchError, UsageError
from tvmfork.lock import Lock
from tvmfork.series import SHIPPED_PREFIX, Patch, Series
from tvmfork.wheel import zipraw

WHEEL_PREFIX = "tvm/"


def to_wheel_path(source_path: str) -> str:
    return WHEEL_PREFIX + source_path[len(SHIPPED_PREFIX) :]


def patched_files(stock: zipfile.ZipFile, patches: list[Patch]) -> dict[str, bytes | None]:
    """Wheel path -> new content (None: deleted) after the patches' Python hunks, in order."""
    touched = sorted({f for p in patches for f in p.python_files})
    if not touched:
        return {}
    names = set(stock.namelist())
    with tempfile.TemporaryDirectory(prefix="tvmfork-overlay-") as tmp:
        root = Path(tmp)
        for src in touched:
            wheel_path = to_wheel_path(src)
            if wheel_path in names:
                target = root / src
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(stock.read(wheel_path))
        env = {"GIT_CEILING_DIRECTORIES": str(root.parent)}
        for p in patches:
            if not p.python_files:
                continue
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
            out[to_wheel_path(src)] = target.read_bytes() if target.is_file() else None
        return out


@dataclass(frozen=True)
class OverlayResult:
    path: Path
    version: str
    included: list[str]
    left_out: list[str]


def local_version(base: str, series: Series, python_only_cut: bool) -> str:
    return f"{base}+fork.{series.digest[:10]}" + (".py" if python_only_cut else "")


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _rewrite_metadata(text: str, version: str, ffi_req: str) -> str:
    text = re.sub(r"(?m)^Version: .*$", f"Version: {version}", text, count=1)
    text, n = re.subn(
        r"(?m)^Requires-Dist: apache-tvm-ffi\b.*$",
        f"Requires-Dist: apache-tvm-ffi{ffi_req}",
        text,
        count=1,
    )
    if n != 1:
        raise PatchError("the stock wheel's METADATA has no apache-tvm-ffi requirement to bound")
    return text


def _rewrite_version_py(text: str, version: str) -> str:
    return re.sub(
        r"(?m)^__version__ = version = .*$", f"__version__ = version = {version!r}", text, count=1
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
    part, with `.py` when any patch is left out."""
    native = [p for p in series.patches if p.native]
    if native and not python_only and only is None:
        names = ", ".join(p.name for p in native)
        raise UsageError(
            f"the series has native patches ({names}); an overlay cannot carry them. Build "
            "from source (--mode source) or pass --python-only to leave them out"
        )
    included = only if only is not None else [p for p in series.patches if not p.native]
    left_out = [p for p in series.patches if p not in included]
    dist, base_version, _, _ = parse_wheel_filename(stock_path.name)
    version = local_version(str(base_version), series, python_only_cut=bool(left_out))
    project = str(dist).replace("-", "_")
    old_info = f"{project}-{base_version}.dist-info/"
    new_info = f"{project}-{version}.dist-info/"
    tag_part = stock_path.name.split("-", 2)[2]  # "py3-none-<platform>.whl"
    out_path = out_dir / f"{project}-{version}-{tag_part}"

    with zipfile.ZipFile(stock_path) as stock:
        changed = patched_files(stock, included)
        infos = stock.infolist()
        stamp = max(i.date_time for i in infos)
        man = manifest.build(
            lock,
            series,
            {p.name for p in included},
            version=version,
            mode="overlay",
            variant="stock-binary",
            extra={"base_wheel": stock_path.name},
        )
        changed[manifest.MANIFEST_PATH] = manifest.dumps(man)
        version_py = WHEEL_PREFIX + "_version.py"
        if version_py in stock.namelist():
            changed[version_py] = _rewrite_version_py(
                stock.read(version_py).decode(), version
            ).encode()
        meta = old_info + "METADATA"
        changed[meta] = _rewrite_metadata(
            stock.read(meta).decode(), version, lock.tvm_ffi_requirement
        ).encode()

        members: list[zipraw.Member] = []
        records: dict[str, str] = {}
        old_record = stock.read(old_info + "RECORD").decode()
        for row in csv.reader(io.StringIO(old_record)):
            if row:
                records[row[0]] = ",".join(row)
        seen = set()
        for info in infos:
            name = info.filename
            if name == old_info + "RECORD":
                continue
            seen.add(name)
            new_name = new_info + name[len(old_info) :] if name.startswith(old_info) else name
            if name in changed:
                data = changed[name]
                if data is None:
                    records.pop(name, None)
                    continue
                members.append(zipraw.new_member(new_name, data, stamp))
                records.pop(name, None)
                records[new_name] = f"{new_name},{_record_hash(data)},{len(data)}"
            else:
                members.append(zipraw.raw_member(stock, info))
                members[-1] = _renamed(members[-1], new_name)
                if name in records and new_name != name:
                    records[new_name] = new_name + records.pop(name)[len(name) :]
        for name in sorted(set(changed) - seen):
            data = changed[name]
            if data is None:
                continue
            members.append(zipraw.new_member(name, data, stamp))
            records[name] = f"{name},{_record_hash(data)},{len(data)}"
        record_name = new_info + "RECORD"
        records.pop(old_info + "RECORD", None)
        lines = [v for k, v in records.items() if not k.endswith("/")]
        lines.append(f"{record_name},,")
        members.append(zipraw.new_member(record_name, ("\n".join(lines) + "\n").encode(), stamp))
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".whl.part")
    zipraw.write(tmp, members)
    tmp.replace(out_path)
    return OverlayResult(
        path=out_path,
        version=version,
        included=[p.name for p in included],
        left_out=[p.name for p in left_out],
    )


def _renamed(m: zipraw.Member, name: str) -> zipraw.Member:
    if m.name == name:
        return m
    return zipraw.Member(
        name,
        m.date_time,
        m.external_attr,
        m.compress_type,
        m.crc,
        m.size,
        m.payload,
        m.create_system,
    )
