"""The speed table as a picture: per model, the fork's time over PyTorch eager's, ONNX
Runtime's and torch.compile's (a bar each; below the line at 1 the fork is faster), with the
geometric means. Drawn with matplotlib where it is installed (`pip install tvmfork[charts]`);
without it there is no chart, and the caller says so."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tvmfork.conformance.report import Speed, geomean

SERIES = (
    ("fork_per_torch", "fork / PyTorch eager"),
    ("fork_per_ort", "fork / ONNX Runtime"),
    ("fork_per_inductor", "fork / torch.compile"),
)


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def draw(speeds: list[Speed], path: Path, title: str) -> Path | None:
    """A PNG of `speeds`' ratios at `path`; None when nothing is timed or matplotlib is not
    installed."""
    if not speeds or not available():
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    shown = [(key, label) for key, label in SERIES if any(getattr(s, key) for s in speeds)]
    names = [s.case for s in speeds]
    width = 0.8 / max(1, len(shown))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(names) + 2), 4.2), dpi=110)
    for i, (key, label) in enumerate(shown):
        values = [getattr(s, key) or 0.0 for s in speeds]
        mean = geomean([v for v in values if v > 0])
        xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(len(names))]
        ax.bar(xs, values, width, label=f"{label} (geometric mean {mean:.2f})" if mean else label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("time ratio (below 1: the fork is faster)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
