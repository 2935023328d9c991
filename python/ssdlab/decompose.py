"""Seed 001's latency decomposition: where a QD1 4 KiB read spends its device time, per medium.

Each medium is one run of the same device with `media.nvm.read_latency` set to the medium's read
latency, under one job of 4 KiB random reads at queue depth 1. The device-side components of the
latency breakdown are grouped into seed 001's categories.

>>> import ssdlab
>>> df = ssdlab.decompose("openexpress-hw", media={"tlc": "450us", "mram": "65ns"}, ios=100)
>>> list(df.index)
['tlc', 'mram']
>>> bool(df.loc["tlc", "NVM"] > 0.9 * df.loc["tlc"].sum())  # slow flash: the medium dominates
True
>>> fig = ssdlab.plot_decomposition(df, "dec.png")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Optional, Union

from ssdlab.api import ConfigLike, _path_arg, run
from ssdlab.exceptions import ConfigError
from ssdlab.plotting import figure, save

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure
    from rich.console import Console

# Seed 001's media and their read latencies (its slide 2).
SEED001_MEDIA: dict[str, str] = {"tlc": "450us", "mlc": "150us", "slc": "25us", "znand": "3us", "pram": "120ns", "mram": "65ns"}

# Seed 001's decomposition categories, each a sum of breakdown components. Seed 001's
# "Translation" (the controller's own work: SQE decode and the FTL's address mapping) is called
# "Controller" here: in a run's breakdown, `translation` is the wait for ATS address
# translations of host memory, which seed 001 does not have.
SEED001_PARTS: dict[str, list[str]] = {
    "Fetching": ["fetch"],
    "Queue/Doorbells": ["doorbell", "queueing", "gc"],  # waits (a fresh drive's GC wait is 0)
    "PRP": ["prp"],
    "Controller": ["controller", "translation", "map"],  # map: the FTL's translation-page loads
    "NVM": ["media", "transfer"],
    "Completion": ["completion"],
}

PLOT_SUFFIXES = (".png", ".svg")


def _bad(path: str, value: object, rule: str) -> ConfigError:
    return ConfigError(f"invalid decomposition: {path} = {value}: {rule}", [{"path": path, "value": str(value), "rule": rule}])


def decompose(
    config: ConfigLike = "openexpress-fw",
    media: Mapping[str, str] = SEED001_MEDIA,
    ios: int = 2000,
    *,
    seed: Optional[int] = None,
    progress: Optional[Callable[[float], None]] = None,
) -> pd.DataFrame:
    """Runs seed 001's decomposition and returns one row per medium (in ``media``'s order) and
    one column per category of :data:`SEED001_PARTS`, in mean microseconds of a read.

    ``config`` is an NVM-backed device (preset, file, dict or :class:`ssdlab.Config`); ``media``
    maps a medium's name to its read latency (``{"tlc": "450us", "mram": "65ns"}``); ``ios`` is
    the number of reads per medium. ``progress(fraction)`` is called now and then; Ctrl-C stops
    with KeyboardInterrupt. The frame's ``attrs`` hold ``config`` (its name) and
    ``read_latency`` (``media``).
    """
    import pandas as pd

    if not isinstance(media, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in media.items()):
        raise _bad("media", repr(media), "must map names to read latencies, such as {'tlc': '450us'}")
    media = dict(media)
    if not media:
        raise _bad("media", "", "give at least one NAME=READ_LATENCY")
    if isinstance(ios, bool) or not isinstance(ios, int) or ios < 1:
        raise _bad("ios", repr(ios), "must be a whole number >= 1")
    if progress is not None and not callable(progress):
        raise _bad("progress", repr(progress), "must be a function (or None)")
    workload = {"numjobs": 1, "iodepth": 1, "rw": "randread", "bs": "4k", "number_ios": int(ios)}
    rows = {}
    label = os.fspath(config) if isinstance(config, (str, os.PathLike)) else None
    for i, (name, latency) in enumerate(media.items()):
        step = (lambda f, i=i: progress((i + f) / len(media))) if progress else None
        r = run(config, workload=workload, seed=seed, set={"media.nvm.read_latency": latency}, progress=step)
        label = label or r.config.description
        b = r.summary["read"]["breakdown_us"]
        rows[name] = {part: sum(b[c] for c in comps) for part, comps in SEED001_PARTS.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(SEED001_PARTS))
    frame.index.name = "medium"
    frame.attrs.update(config=label, read_latency=media)
    return frame


def plot_decomposition(frame: pd.DataFrame, path: Union[None, str, os.PathLike[str]] = None, *, title: Optional[str] = None) -> Figure:
    """Stacked bars of each medium's shares of device latency (a frame from :func:`decompose`),
    written to ``path`` (.png or .svg) when given. Returns the figure; matplotlib's backend is
    left as it is (the figure has its own Agg canvas, so notebooks keep theirs)."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise _bad("frame", type(frame).__name__, "must be the DataFrame decompose() returns")
    if path is not None and not _path_arg(path, "path").lower().endswith(PLOT_SUFFIXES):
        raise _bad("plot", os.fspath(path), "write a .png or .svg file")
    fig = figure(6.5, 3.8)
    ax = fig.add_subplot()
    shares = frame.div(frame.sum(axis=1).replace(0.0, 1.0), axis=0)
    latency = frame.attrs.get("read_latency", {})
    names = [f"{m}\n{latency[m]}" if m in latency else str(m) for m in frame.index]
    bottom = [0.0] * len(frame)
    hatches = ["", "//", "..", "xx", "\\\\", "++", "oo", "--"]
    for i, part in enumerate(frame.columns):
        ax.bar(names, shares[part], bottom=bottom, label=part, hatch=hatches[i % len(hatches)], edgecolor="white")
        bottom = [b + s for b, s in zip(bottom, shares[part])]
    ax.set_xlabel("medium (read latency)" if latency else "medium")
    ax.set_ylabel("share of device latency (fraction)")
    ax.set_title(title if title is not None else f"Latency decomposition ({frame.attrs.get('config', 'device')})")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return save(fig, path)


def print_table(out: Console, frame: pd.DataFrame, config: str) -> None:
    """The table ``ssdlab decompose`` prints: each medium's device time per part, in us and share."""
    from rich.table import Table

    t = Table(title=f"Device time of a QD1 4 KiB read, {config} (us, and share)", title_justify="left")
    t.add_column("medium")
    for part in SEED001_PARTS:
        t.add_column(part, justify="right")
    for name, row in frame.to_dict(orient="index").items():
        total = sum(row.values()) or 1.0
        t.add_row(str(name), *(f"{v:.3f} ({100 * v / total:.0f}%)" for v in row.values()))
    out.print(t)
