"""Reading TVMScript diagnostics in regression tests: which line an error points at."""

from __future__ import annotations

import re
from pathlib import Path


def reported_line(message: str) -> int:
    """The line number of the `--> file:LINE:COL` pointer of a DiagnosticError."""
    match = re.search(r"--> .*:(\d+):\d+", message)
    assert match, message
    return int(match.group(1))


def line_of(test_file: str, marker: str) -> int:
    """The 1-based line of `test_file` that ends with `marker` (a trailing comment)."""
    lines = Path(test_file).read_text().splitlines()
    return 1 + next(i for i, text in enumerate(lines) if text.rstrip().endswith(marker))
