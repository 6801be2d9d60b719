"""Hunks git would apply at the wrong place.

A patch applied where its stated lines are not (its Depends-On patches alone, on the pin or on
the stock wheel's files, without the series' other patches before it) is placed by git at the
match of its context nearest to the stated line. Where that context occurs more than once in
the file, the nearest match can be another function: `nonmaxsuppression-reads-its-limits-at-
run-time` rewrote ONNX's `AllClassNMS` converter instead of `NonMaxSuppression`, whose limit
parsing is the same text, and git reported success. `ambiguous` finds such hunks before they
are applied.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tvmfork.errors import PatchError
from tvmfork.series import Patch

_FILE_RE = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@ ?(.*)$")
# git's default funcname: a line that starts with a letter, "_" or "$" (a top-level def/class)
_HEADING_RE = re.compile(r"^[A-Za-z_$]")


@dataclass(frozen=True)
class Hunk:
    path: str  # the file before the patch (a/...)
    start: int  # the line the hunk states, 1-based, in the file before the patch
    before: tuple[str, ...]  # its context and removed lines, in order
    heading: str = ""  # the line git shows after the header: the enclosing top-level def/class


def parse(diff: str) -> list[Hunk]:
    """The hunks of a git diff (or a format-patch file), file by file; each hunk's lines are
    counted by its header, so a message or signature after it is not read as one."""
    hunks: list[Hunk] = []
    path: str | None = None
    lines = iter(diff.split("\n"))
    for line in lines:
        if m := _FILE_RE.match(line):
            path = m.group(1)
        elif path is not None and (m := _HUNK_RE.match(line)):
            old = int(m.group(2)) if m.group(2) is not None else 1
            new = int(m.group(3)) if m.group(3) is not None else 1
            before: list[str] = []
            while old > 0 or new > 0:
                body = next(lines, None)
                if body is None:
                    break
                if body.startswith("\\"):  # "\ No newline at end of file"
                    continue
                kind, text = body[:1], body[1:]
                if kind in (" ", ""):
                    before.append(text)
                    old, new = old - 1, new - 1
                elif kind == "-":
                    before.append(text)
                    old -= 1
                elif kind == "+":
                    new -= 1
                else:
                    break
            hunks.append(Hunk(path, int(m.group(1)), tuple(before), m.group(4).rstrip()))
    return hunks


def ambiguous(diff: str, read: Callable[[str], str | None], only: str = "") -> list[str]:
    """Hunks of `diff` (paths starting with `only`) whose context and removed lines are not at
    their stated line in the file as `read` gives it, and occur there more than once: git
    would apply them at the nearest occurrence, which need not be the code the patch changes.
    Each is described in a sentence; a file `read` does not have (None) is skipped."""
    out = []
    cache: dict[str, list[str] | None] = {}
    for h in parse(diff):
        if not h.path.startswith(only) or not h.before:
            continue
        if h.path not in cache:
            text = read(h.path)
            cache[h.path] = None if text is None else text.split("\n")
        lines = cache[h.path]
        if lines is None:
            continue
        n = len(h.before)
        first = h.before[0]
        at = [
            i
            for i, line in enumerate(lines)
            if line == first and tuple(lines[i : i + n]) == h.before
        ]
        if len(at) > 1 and h.start - 1 not in at:
            nearest = min(at, key=lambda i: abs(i - (h.start - 1)))
            # the heading git would show there: the nearest top-level line above the match
            if h.heading and _heading(lines, nearest) == h.heading:
                continue  # the nearest match is in the def/class the patch names
            places = ", ".join(str(i + 1) for i in at)
            where = f" in {h.heading!r}" if h.heading else ""
            out.append(
                f"{h.path}: the hunk stated at line {h.start}{where} matches {len(at)} places "
                f"({places}), none at its line: git would apply it at {nearest + 1}"
                + (f", in {_heading(lines, nearest)!r}" if h.heading else "")
            )
    return out


def _heading(lines: list[str], at: int) -> str:
    for i in range(at - 1, -1, -1):
        if _HEADING_RE.match(lines[i]):
            return lines[i].rstrip()
    return ""


def refuse_misplaced(tree: Path, patch: Patch, only: str = "") -> None:
    """A PatchError naming each hunk of `patch` (paths starting with `only`) that git would
    apply at the wrong place in the files under `tree` (`ambiguous`)."""

    def read(path: str) -> str | None:
        f = tree / path
        return f.read_text(errors="replace") if f.is_file() else None

    misplaced = ambiguous(patch.data.decode("utf-8", "replace"), read, only)
    if misplaced:
        raise PatchError(
            f"{patch.name}: a hunk would apply at the wrong place (its context occurs more "
            "than once, none at its stated line):\n" + "\n".join("    " + m for m in misplaced)
        )
