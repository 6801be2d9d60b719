"""A minimal deterministic zip writer that copies unchanged members without recompressing.

Recompressing a 256 MB libtvm_compiler.so would dominate an overlay build; copying the
stored deflate stream is a read and a write. Output depends only on the inputs (no clock, no
host data), so two builds of the same wheel are byte-identical. No zip64: wheels of TVM are
far below 4 GiB and 65535 members.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

LOCAL_SIG = 0x04034B50
CENTRAL_SIG = 0x02014B50
END_SIG = 0x06054B50
UTF8_FLAG = 0x800


@dataclass(frozen=True)
class Member:
    """One entry to write: metadata plus either raw (compressed) bytes or plain data."""

    name: str
    date_time: tuple[int, int, int, int, int, int]
    external_attr: int
    compress_type: int
    crc: int
    size: int
    payload: bytes  # already in `compress_type` form
    create_system: int = 3


def _dos(date_time: tuple[int, int, int, int, int, int]) -> tuple[int, int]:
    y, mo, d, h, mi, s = date_time
    return ((y - 1980) << 9) | (mo << 5) | d, (h << 11) | (mi << 5) | (s // 2)


def raw_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Member:
    """The member as stored in `zf`, compressed bytes untouched."""
    fp: BinaryIO = zf.fp  # type: ignore[assignment]
    fp.seek(info.header_offset)
    header = fp.read(30)
    if struct.unpack("<I", header[:4])[0] != LOCAL_SIG:
        raise ValueError(f"bad local header for {info.filename}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    payload = fp.read(info.compress_size)
    return Member(
        name=info.filename,
        date_time=info.date_time,
        external_attr=info.external_attr,
        compress_type=info.compress_type,
        crc=info.CRC,
        size=info.file_size,
        payload=payload,
        create_system=info.create_system,
    )


def new_member(
    name: str,
    data: bytes,
    date_time: tuple[int, int, int, int, int, int],
    mode: int = 0o644,
) -> Member:
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    payload = comp.compress(data) + comp.flush()
    return Member(
        name=name,
        date_time=date_time,
        external_attr=(0o100000 | mode) << 16,
        compress_type=zipfile.ZIP_DEFLATED,
        crc=zlib.crc32(data),
        size=len(data),
        payload=payload,
    )


def write(path: Path, members: list[Member]) -> None:
    central = bytearray()
    offset = 0
    with path.open("wb") as out:
        for m in members:
            name = m.name.encode("utf-8")
            flags = UTF8_FLAG if not m.name.isascii() else 0
            d, t = _dos(m.date_time)
            version = 20
            local = struct.pack(
                "<IHHHHHIIIHH",
                LOCAL_SIG,
                version,
                flags,
                m.compress_type,
                t,
                d,
                m.crc,
                len(m.payload),
                m.size,
                len(name),
                0,
            )
            out.write(local + name)
            out.write(m.payload)
            central += (
                struct.pack(
                    "<IHHHHHHIIIHHHHHII",
                    CENTRAL_SIG,
                    (m.create_system << 8) | version,
                    version,
                    flags,
                    m.compress_type,
                    t,
                    d,
                    m.crc,
                    len(m.payload),
                    m.size,
                    len(name),
                    0,
                    0,
                    0,
                    0,
                    m.external_attr,
                    offset,
                )
                + name
            )
            offset += len(local) + len(name) + len(m.payload)
        out.write(central)
        out.write(
            struct.pack(
                "<IHHHHIIH", END_SIG, 0, 0, len(members), len(members), len(central), offset, 0
            )
        )
