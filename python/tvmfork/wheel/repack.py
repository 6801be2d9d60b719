"""Rewrite a wheel: replace, add or delete members, optionally under a new version.

Unchanged members are copied raw (no recompression), RECORD is regenerated for what changed,
and the output depends only on the inputs, so the same call gives byte-identical wheels.
Both wheel modes finish here: the overlay (stock wheel + Python hunks) and the source build
(the freshly built wheel + manifest + bounded tvm-ffi requirement).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import zipfile
from pathlib import Path

from packaging.utils import parse_wheel_filename

from tvmfork.errors import PatchError
from tvmfork.wheel import zipraw


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


FFI_REQUIREMENT = re.compile(r"(?m)^Requires-Dist: apache-tvm-ffi\b(.*)$")


def ffi_requirement(metadata: str) -> str:
    """The apache-tvm-ffi version specifier a wheel's METADATA states (`>=0.1.14.post0`)."""
    m = FFI_REQUIREMENT.search(metadata)
    if m is None:
        raise PatchError("the wheel's METADATA has no apache-tvm-ffi requirement")
    return m.group(1).strip()


def rewrite_metadata(text: str, version: str, ffi_req: str | None) -> str:
    """METADATA with `version` and the apache-tvm-ffi requirement bounded to `ffi_req`
    (None: the wheel's own requirement kept, for another release than the lock's)."""
    text = re.sub(r"(?m)^Version: .*$", f"Version: {version}", text, count=1)
    if ffi_req is None:
        ffi_requirement(text)
        return text
    text, n = FFI_REQUIREMENT.subn(f"Requires-Dist: apache-tvm-ffi{ffi_req}", text, count=1)
    if n != 1:
        raise PatchError("the wheel's METADATA has no apache-tvm-ffi requirement to bound")
    return text


def out_name(src: Path, version: str) -> str:
    """The file name of `src` re-versioned: `apache_tvm-<version>-<tags>.whl`."""
    dist, _, _, _ = parse_wheel_filename(src.name)
    project = str(dist).replace("-", "_")
    return f"{project}-{version}-{src.name.split('-', 2)[2]}"


def dist_info(src: Path) -> str:
    dist, version, _, _ = parse_wheel_filename(src.name)
    return f"{str(dist).replace('-', '_')}-{version}.dist-info/"


def repack(
    src: Path, out_path: Path, changed: dict[str, bytes | None], version: str | None = None
) -> None:
    """Write `out_path`: `src` with `changed` (member -> new bytes, None deletes; names as in
    `src`) applied, its dist-info renamed to `version` when given."""
    old_info = dist_info(src)
    new_info = old_info
    if version is not None:
        dist, _, _, _ = parse_wheel_filename(src.name)
        new_info = f"{str(dist).replace('-', '_')}-{version}.dist-info/"
    with zipfile.ZipFile(src) as zf:
        infos = zf.infolist()
        stamp = max(i.date_time for i in infos)
        records: dict[str, str] = {}
        for row in csv.reader(io.StringIO(zf.read(old_info + "RECORD").decode())):
            if row:
                records[row[0]] = ",".join(row)
        members: list[zipraw.Member] = []
        seen = set()
        for info in infos:
            name = info.filename
            if name == old_info + "RECORD":
                continue
            seen.add(name)
            new_name = new_info + name[len(old_info) :] if name.startswith(old_info) else name
            if name in changed:
                data = changed[name]
                records.pop(name, None)
                if data is None:
                    continue
                members.append(zipraw.new_member(new_name, data, stamp))
                records[new_name] = f"{new_name},{record_hash(data)},{len(data)}"
            else:
                members.append(_renamed(zipraw.raw_member(zf, info), new_name))
                if name in records and new_name != name:
                    records[new_name] = new_name + records.pop(name)[len(name) :]
        for name in sorted(set(changed) - seen):
            data = changed[name]
            if data is None:
                continue
            members.append(zipraw.new_member(name, data, stamp))
            records[name] = f"{name},{record_hash(data)},{len(data)}"
    record_name = new_info + "RECORD"
    records.pop(old_info + "RECORD", None)
    lines = [v for k, v in records.items() if not k.endswith("/")]
    lines.append(f"{record_name},,")
    members.append(zipraw.new_member(record_name, ("\n".join(lines) + "\n").encode(), stamp))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".whl.part")
    zipraw.write(tmp, members)
    tmp.replace(out_path)


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
