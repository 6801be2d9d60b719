"""The docs pages the proving commands write (`verify --table`, `roll --table`) and
`tvmfork status` reads back: a title, how the page was made, a count per kind, and one row
per patch whose first cell is the patch's name in backticks. One writer and one reader, so the
format is defined once."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

KIND = "kind"


def kind_of(verdict: str, kinds: Sequence[tuple[str, str]], default: str) -> str:
    """The kind of the first (prefix, kind) of `kinds` whose prefix starts `verdict`."""
    return next((k for prefix, k in kinds if verdict.startswith(prefix)), default)


def cell(text: str) -> str:
    """`text` as one markdown table cell: `|` escaped, on one line."""
    return text.replace("|", "\\|").replace("\n", " ")


def render(
    title: str,
    lines: Sequence[str],
    head: Sequence[str],
    rows: Sequence[tuple[str, Sequence[str]]],
    kinds: Sequence[str] = (),
) -> str:
    """A page: `rows` are (patch name, its cells under `head[1:]`); one of `head` is "kind",
    counted in a table of its own, in the order of `kinds` (then any other kind found)."""
    at = list(head).index(KIND) - 1
    counts = Counter(cells[at] for _, cells in rows)
    order = [k for k in kinds if k in counts] + sorted(k for k in counts if k not in kinds)
    out = [f"# {title}", "", *lines, "", "| kind | patches |", "| --- | --- |"]
    out += [f"| {k} | {counts[k]} |" for k in order]
    out += ["", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, cells in rows:
        shown = name.removesuffix(".patch")
        out.append(f"| `{shown}` | " + " | ".join(cell(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


_ROW = re.compile(r"^\| `(?P<name>[^`]+)` \|(?P<rest>.*)\|\s*$")
_SPLIT = re.compile(r"(?<!\\)\|")


def read(path: Path, column: str = KIND) -> dict[str, str]:
    """patch name (with `.patch`) -> its `column` cell, from a page `render` wrote; {} when
    the page does not exist."""
    if not path.is_file():
        return {}
    at: int | None = None
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("| patch |"):
            names = [c.strip() for c in _SPLIT.split(line.strip().strip("|"))]
            at = names.index(column) - 1 if column in names else None
        elif at is not None and (m := _ROW.match(line)):
            cells = [c.strip() for c in _SPLIT.split(m.group("rest"))]
            if at < len(cells):
                out[m.group("name") + ".patch"] = cells[at]
    return out
