"""The patch series: `patches/series` (the order) and one format-patch file per patch.

A patch is *native* when it changes anything that is compiled: every file outside
`python/tvm/` except upstream's tests and docs (which never ship in a wheel). That is
computed from the diff, never written by hand.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from email.header import decode_header, make_header
from pathlib import Path

from tvmfork.errors import PatchError

SERIES = "series"
LOCK = "lock.toml"
SHIPPED_PREFIX = "python/tvm/"
NON_SHIPPING_PREFIXES = ("tests/", "docs/")
REQUIRED_TRAILERS = ("Fixes", "Upstream-Status", "Regression-Test")
STATUS_RE = re.compile(r"^(pending|fork-only|submitted\s+https?://\S+|merged\s+[0-9a-f]{7,40})$")
TRAILER_RE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):\s*(.*)$")
DIFF_RE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


def classify(path: str) -> str:
    """`python` (ships in the wheel), `test` (never ships) or `native` (needs a build)."""
    if path.startswith(SHIPPED_PREFIX):
        return "python"
    if path.startswith(NON_SHIPPING_PREFIXES):
        return "test"
    return "native"


@dataclass(frozen=True)
class Patch:
    name: str
    path: Path
    data: bytes
    subject: str
    message: str
    trailers: dict[str, list[str]]
    files: tuple[str, ...]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def code(self) -> bytes:
        """The diff alone, without the message: what a build and its tests see."""
        at = self.data.find(b"diff --git ")
        return self.data[at:] if at >= 0 else b""

    @property
    def native(self) -> bool:
        return any(classify(f) == "native" for f in self.files)

    @property
    def python_files(self) -> tuple[str, ...]:
        return tuple(f for f in self.files if classify(f) == "python")

    @property
    def added_files(self) -> tuple[str, ...]:
        """The files the patch creates (`new file mode` in its diff)."""
        found = re.findall(rb"^diff --git a/\S+ b/(\S+)\n(?:new file mode )", self.code, flags=re.M)
        return tuple(f.decode() for f in found)

    def trailer(self, key: str) -> str | None:
        values = self.trailers.get(key)
        return values[0] if values else None


def _header_block(text: str) -> tuple[dict[str, str], str]:
    head, _, rest = text.partition("\n\n")
    headers: dict[str, str] = {}
    last = None
    for line in head.splitlines()[1:]:  # first line is the mbox "From <sha> <date>"
        if line.startswith((" ", "\t")) and last:
            headers[last] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if sep:
            last = key.strip()
            headers[last] = value.strip()
    return headers, rest


def parse_patch(path: Path) -> Patch:
    data = path.read_bytes()
    text = data.decode("utf-8", errors="replace")
    if not text.startswith("From "):
        raise PatchError(f"{path.name}: not a git format-patch file (no 'From ' line)")
    headers, rest = _header_block(text)
    if "Subject" not in headers:
        raise PatchError(f"{path.name}: no Subject header")
    subject = str(make_header(decode_header(headers["Subject"])))
    message, sep, _diff = rest.partition("\n---\n")
    if not sep:
        message = rest.split("\ndiff --git ", 1)[0]
    files = tuple(dict.fromkeys(m.group(2) for m in DIFF_RE.finditer(text)))
    if not files:
        raise PatchError(f"{path.name}: contains no diff")
    return Patch(
        name=path.name,
        path=path,
        data=data,
        subject=subject,
        message=message.strip("\n"),
        trailers=parse_trailers(message),
        files=files,
    )


def parse_trailers(message: str) -> dict[str, list[str]]:
    """Trailers are the `Key: value` lines of the message's last paragraph."""
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    out: dict[str, list[str]] = {}
    if not paragraphs:
        return out
    for line in paragraphs[-1].splitlines():
        m = TRAILER_RE.match(line.strip())
        if m:
            out.setdefault(m.group(1), []).append(m.group(2).strip())
    return out


def read_order(patches_dir: Path) -> list[str]:
    series = patches_dir / SERIES
    if not series.is_file():
        raise PatchError(f"no series file at {series}")
    names = []
    for raw in series.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            names.append(line)
    return names


@dataclass(frozen=True)
class Series:
    dir: Path
    patches: tuple[Patch, ...]

    @property
    def digest(self) -> str:
        """Identifies the series' content and order (used in wheel versions)."""
        h = hashlib.sha256()
        for p in self.patches:
            h.update(p.name.encode() + b"\0" + p.data + b"\0")
        return h.hexdigest()

    def native_closure(self) -> list[Patch]:
        """The patches only a source build carries: the native ones and those needing one."""
        return [p for p in self.patches if self.needs_build(p)]

    @property
    def native_digest(self) -> str:
        """Identifies the native closure's code: what the native lane proves. A change to any
        other patch, or to a message (a title, a trailer), leaves it as it was."""
        h = hashlib.sha256()
        for p in self.native_closure():
            h.update(p.name.encode() + b"\0" + p.code + b"\0")
        return h.hexdigest()

    def get(self, name: str) -> Patch:
        for p in self.patches:
            if p.name == name or p.name.removesuffix(".patch") == name:
                return p
        known = "\n  ".join(p.name.removesuffix(".patch") for p in self.patches)
        raise PatchError(f"no patch named {name!r} in {self.dir / SERIES}; the patches:\n  {known}")

    def dependencies(self, patch: Patch) -> list[Patch]:
        """The patch's `Depends-On:` patches, transitively, in series order."""
        wanted: set[str] = set()
        todo = [patch]
        while todo:
            for dep in todo.pop().trailers.get("Depends-On", []):
                dep_patch = self.get(dep)
                if dep_patch.name not in wanted:
                    wanted.add(dep_patch.name)
                    todo.append(dep_patch)
        if patch.name in wanted:
            raise PatchError(f"{patch.name} depends on itself")
        return [p for p in self.patches if p.name in wanted]

    def needs_build(self, patch: Patch) -> str:
        """Why `patch` needs a source build ("" when an overlay can carry it): it is native, or
        a patch it depends on is (its Python code calls what that one compiles)."""
        if patch.native:
            return "native patch: needs a source build"
        native = [d.name for d in self.dependencies(patch) if d.native]
        if native:
            return f"depends on native {', '.join(native)}: needs a source build"
        return ""


def load(patches_dir: Path) -> Series:
    """Load the series in order; a duplicate or missing entry is an error."""
    names = read_order(patches_dir)
    seen: set[str] = set()
    problems = []
    for name in names:
        if name in seen:
            problems.append(f"{name} is listed more than once")
        seen.add(name)
        if not (patches_dir / name).is_file():
            problems.append(f"{name} is listed but the file does not exist")
    if problems:
        raise PatchError(f"{patches_dir / SERIES}:\n  " + "\n  ".join(problems))
    return Series(
        dir=patches_dir, patches=tuple(parse_patch(patches_dir / n) for n in dict.fromkeys(names))
    )


def unlisted(patches_dir: Path) -> list[str]:
    listed = set(read_order(patches_dir))
    return sorted(p.name for p in patches_dir.glob("*.patch") if p.name not in listed)


def load_or_none(patches_dir: Path) -> Series | None:
    """The series, or None where patches/ does not hold a valid one (a series being rewritten:
    `export` then writes it afresh). The error is the result here, so it is caught here."""
    try:
        return load(patches_dir)
    except PatchError:
        return None
