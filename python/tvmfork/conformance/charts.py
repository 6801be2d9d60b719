"""The speed table as a picture: per model, the fork's time over PyTorch eager's, ONNX
Runtime's and torch.compile's (a bar each; below the line at 1 the fork is faster), with the
geometric means. Drawn with matplotlib where it is installed (`pip install tvmfork[charts]`);
without it there is no chart, and the caller says so."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def draw(
    names: list[str], series: dict[str, list[float | None]], path: Path, title: str
) -> Path | None:
    """A PNG at `path` of a bar per name for each series (label -> one ratio per name, None
    where there is none), with each series' geometric mean; None when there is nothing to
    draw or matplotlib is not installed."""
    shown = {label: v for label, v in series.items() if any(x for x in v)}
    if not names or not shown or not available():
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    width = 0.8 / len(shown)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(names) + 2), 4.2), dpi=110)
    for i, (label, ratios) in enumerate(shown.items()):
        values = [v or 0.0 for v in ratios]
        logs = [math.log(v) for v in values if v > 0]
        mean = math.exp(sum(logs) / len(logs))
        xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(len(names))]
        ax.bar(xs, values, width, label=f"{label} (geometric mean {mean:.2f})")
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
