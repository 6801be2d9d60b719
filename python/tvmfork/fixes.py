"""What a patch's `Fixes:` trailer names, and the sections of this repository it points at.

A `Fixes:` value holds references separated by ';' or ',': an issue of a GitHub repository
(`apache/tvm#17890`), a URL, or a section of a Markdown file of this repository
(`patches/README.md#<section>`, whose anchor is GitHub's for the heading). `tvmfork check`
resolves them; `tvmfork stage` puts the upstream ones and the sections' text in a pull
request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ISSUE_RE = re.compile(r"^[\w.-]+/[\w.-]+#\d+$")
HEADING_RE = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Ref:
    text: str

    @property
    def upstream(self) -> bool:
        """An issue or a URL: meaningful outside this repository."""
        return bool(ISSUE_RE.match(self.text)) or self.text.startswith(("http://", "https://"))

    @property
    def path(self) -> str:
        return self.text.partition("#")[0]

    @property
    def anchor(self) -> str:
        return self.text.partition("#")[2]


def refs(values: list[str]) -> list[Ref]:
    """The references of `Fixes:` trailer values."""
    return [Ref(r) for v in values for r in (x.strip() for x in re.split(r"[;,]", v)) if r]


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading's text."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    return {anchor(m.group(1)) for ln in markdown.splitlines() if (m := HEADING_RE.match(ln))}


def section(page: Path, wanted: str) -> str:
    """The text under the heading of `page` whose anchor is `wanted` (up to the next
    heading), without its heading."""
    out: list[str] = []
    inside = False
    for line in page.read_text().splitlines():
        m = HEADING_RE.match(line)
        if m:
            if inside:
                break
            inside = anchor(m.group(1)) == wanted
            continue
        if inside:
            out.append(line)
    return "\n".join(out).strip()
