"""The one way ssdlab makes a figure: its own Agg canvas, so that matplotlib's backend (a
notebook's) is left as it is, and written to a file only when a path is given."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def figure(width: float, height: float) -> Figure:
    """A new figure of ``width`` x ``height`` inches with its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, path: Union[None, str, os.PathLike[str]], dpi: Optional[float] = None) -> Figure:
    """Writes ``fig`` to ``path`` (its format by extension) when a path is given; returns it."""
    if path is not None:
        fig.savefig(path, dpi=dpi)  # None: matplotlib's savefig.dpi
    return fig
