"""Plots of a run's time series (``stats.interval``): one panel per column against time, the
device rows (``tenant == "all"``), with the SNIA PTS measurement window shaded when the run
tracked a steady-state metric."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, Union

from ssdlab.api import Result, _path_arg
from ssdlab.decompose import PLOT_SUFFIXES
from ssdlab.exceptions import ConfigError
from ssdlab.plotting import figure, save

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Columns plotted by default, those of them the run has: throughput, tail latency, and the
#: FTL's garbage collection (WAF per interval, free blocks, units moved).
DEFAULT_COLUMNS = ("iops", "lat_p99_us", "ftl.waf", "ftl.free_blocks", "ftl.gc.units_moved")

LABELS = {
    "iops": "IOPS",
    "bandwidth_mib_s": "MiB/s",
    "lat_mean_us": "mean latency (us)",
    "lat_p99_us": "p99 latency (us)",
    "ftl.waf": "WAF (interval)",
    "ftl.free_blocks": "free blocks",
    "ftl.gc.units_moved": "GC units moved",
    "ftl.gc.victims": "GC victims",
    "ftl.host_writes": "host units written",
}


def _bad(path: str, value: object, rule: str) -> ConfigError:
    return ConfigError(f"invalid time-series plot: {path} = {value}: {rule}", [{"path": path, "value": str(value), "rule": rule}])


def plot_timeseries(
    result: Result,
    path: Union[None, str, os.PathLike[str]] = None,
    *,
    columns: Optional[Sequence[str]] = None,
    title: Optional[str] = None,
) -> Figure:
    """Plots the device rows of ``result``'s time series, one panel per column (default: those of
    :data:`DEFAULT_COLUMNS` the run has), to ``path`` (.png or .svg) when given. Intervals after
    the last I/O are left out. Returns the figure (with its own Agg canvas)."""
    if not isinstance(result, Result):
        raise _bad("result", type(result).__name__, "must be the Result of ssdlab.run")
    if path is not None and not _path_arg(path, "path").lower().endswith(PLOT_SUFFIXES):
        raise _bad("plot", os.fspath(path), "write a .png or .svg file")
    frame = result.timeseries
    if frame is None:
        raise _bad("stats.interval", "unset", "a time-series plot needs --set stats.interval=T")
    dev = frame[frame["tenant"] == "all"]
    if (dev["ios"] > 0).any():
        dev = dev.loc[: dev.index[dev["ios"] > 0][-1]]
    cols = [c for c in (columns if columns is not None else DEFAULT_COLUMNS) if c in dev.columns]
    missing = [c for c in (columns or ()) if c not in dev.columns]
    if missing or not cols:
        raise _bad("columns", ", ".join(missing) or "none", f"the series has {', '.join(c for c in dev.columns if c not in ('tenant', 'start_s', 'end_s'))}")
    fig = figure(7.0, 1.6 * len(cols) + 0.6)
    axes = fig.subplots(len(cols), 1, sharex=True, squeeze=False)[:, 0]
    t = (dev["start_s"] + dev["end_s"]) / 2
    steady = result.summary.get("steady_state")
    for ax, c in zip(axes, cols):
        ax.plot(t, dev[c], drawstyle="steps-mid", linewidth=1.0)
        ax.set_ylabel(LABELS.get(c, c), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if steady and steady.get("reached") and c == steady.get("metric"):
            ax.axhline(steady["average"], color="C3", linewidth=0.8, linestyle="--", label=f"steady {steady['average']:.3g}")
            ax.legend(fontsize=7, loc="lower right")
        if steady and steady.get("reached"):
            rows = dev.reset_index(drop=True)
            first, last = steady["first"], steady["last"]
            if last < len(rows):
                ax.axvspan(rows["start_s"][first], rows["end_s"][last], color="C3", alpha=0.08)
    axes[-1].set_xlabel("simulated time (s)", fontsize=8)
    fig.suptitle(title if title is not None else str(getattr(result.config, "description", "time series")), fontsize=9)
    fig.tight_layout()
    return save(fig, path, dpi=110)
