"""A hunk whose context occurs twice is placed by git at the occurrence nearest its stated
line: `hunks.ambiguous` says so before it is applied elsewhere than the code it changes."""

from __future__ import annotations

import pytest

from tvmfork import hunks

pytestmark = pytest.mark.unit

BLOCK = ["    limit = read(inputs[2])", "    iou = read(inputs[3])", "    score = read(inputs[4])"]


def _file(lead: int) -> str:
    """`lead` lines, then class A and class B, each holding BLOCK."""
    lines = [f"# line {i}" for i in range(lead)]
    for name in ("A", "B"):
        lines += [f"class {name}:", "  def impl(self):", *BLOCK, "    return 0", ""]
    return "\n".join(lines) + "\n"


def _diff(start: int, heading: str) -> str:
    return (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n"
        f"@@ -{start},3 +{start},3 @@ {heading}\n"
        + "".join(
            f" {line}\n" if i != 1 else f"-{line}\n+    iou = 0.5\n" for i, line in enumerate(BLOCK)
        )
        + "-- \n2.39.5\n"
    )


def test_parse_counts_a_hunk_by_its_header() -> None:
    (h,) = hunks.parse(_diff(3, "class A:"))
    assert (h.path, h.start, h.before, h.heading) == ("x.py", 3, tuple(BLOCK), "class A:")


def test_a_hunk_at_its_line_or_alone_is_not_ambiguous() -> None:
    text = _file(0)  # class A's block at line 3, class B's at 10
    assert hunks.ambiguous(_diff(3, "class A:"), lambda p: text) == []
    # the nearest occurrence (line 10) is in the class the header names: git is right
    assert hunks.ambiguous(_diff(12, "class B:"), lambda p: text) == []
    assert hunks.ambiguous(_diff(3, "class A:"), lambda p: None) == []  # no such file


def test_a_hunk_nearer_another_class_is_reported() -> None:
    # written for class A at line 12 (other patches added 9 lines above it); here class A's
    # block is at 3 and class B's at 10: git would change class B
    (problem,) = hunks.ambiguous(_diff(12, "class A:"), lambda p: _file(0))
    assert "matches 2 places (3, 10)" in problem and "apply it at 10, in 'class B:'" in problem
