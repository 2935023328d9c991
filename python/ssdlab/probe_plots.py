"""The probe's figures: seed 004's heatmaps (latency over size and depth, T between two drives)
and one panel per experiment (strided reads, mixed load, sustained writes), as matplotlib figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ssdlab.plotting import figure
from ssdlab.probe import Probe, _medians, versus

if TYPE_CHECKING:
    import pandas as pd


def plot_scale(p: Probe) -> Any:
    """Mean random-read latency over size and queue depth (log colour scale), values printed."""
    sc = p.data.get("scale")
    if sc is None or sc.empty:
        return None
    from matplotlib.colors import LogNorm

    grid = sc[sc["rw"] == "randread"].pivot_table(index="bs_kib", columns="qd", values="lat_us", aggfunc="median")
    return _heatmap(grid, "viridis", LogNorm(), lambda v: f"{v:.0f}" if v >= 10 else f"{v:.1f}", "white", f"{p.target.get('target')}: random-read latency (us)")


def plot_versus(a: Probe, b: Probe) -> Any:
    """Seed 004's heatmap of T between two probes (diverging colours, T printed in each cell)."""
    from matplotlib.colors import TwoSlopeNorm

    t = versus(a, b)
    lim = max(1.0, float(abs(t.values).max()))
    return _heatmap(t, "RdBu", TwoSlopeNorm(0.0, -lim, lim), lambda v: f"{v:.1f}", "black", f"(L_higher - L_lower) / L_lower, > 0: {a.target.get('target')} faster")


def _heatmap(grid: pd.DataFrame, cmap: str, norm: Any, label: Callable[[float], str], color: str, title: str) -> Any:
    """A size x queue-depth grid as a heatmap, largest size on top, each cell's value printed."""
    grid = grid.sort_index(ascending=False)
    fig = figure(1.6 + 0.75 * len(grid.columns), 1.0 + 0.55 * len(grid.index))
    ax = fig.add_subplot()
    im = ax.imshow(grid.values, cmap=cmap, norm=norm, aspect="auto")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = float(grid.values[i, j])
            if v == v:
                ax.text(j, i, label(v), ha="center", va="center", fontsize=7, color=color)
    ax.set_xticks(range(len(grid.columns)), [str(int(c)) for c in grid.columns])
    ax.set_yticks(range(len(grid.index)), [str(int(s)) for s in grid.index])
    ax.set_xlabel("queue depth")
    ax.set_ylabel("request size (KiB)")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, shrink=0.8)
    fig.tight_layout()
    return fig


def _panel(p: Probe, experiment: str, w: float, h: float) -> Optional[tuple[pd.DataFrame, Any, Any]]:
    """The experiment's table, a figure and its axes; None when the probe lacks it."""
    df = p.data.get(experiment)
    if df is None or df.empty:
        return None
    df = _medians(df)
    fig = figure(w, h)
    return df, fig, fig.add_subplot()


def _finish(p: Probe, fig: Any, ax: Any, title: str, ylabel: str, grid: str = "both") -> Any:
    ax.set_ylabel(ylabel)
    ax.set_title(f"{p.target.get('target')}: {title}", fontsize=9)
    ax.grid(axis=grid, alpha=0.3)
    fig.tight_layout()
    return fig


def plot_strided(p: Probe) -> Any:
    """Strided-read bandwidth (the period's multiples marked) and, beside it, the pinned pairs'
    bandwidth over two on one unit (the parallel units)."""
    from ssdlab.probe import PAIRS

    il = p.data.get("interleave")
    if il is None or il.empty:
        return None
    il = _medians(il)
    pairs = p.data.get(PAIRS)
    pairs = None if pairs is None or pairs.empty else _medians(pairs)
    inter = p.interleave or {}
    fig = figure(9.5 if pairs is not None else 6.0, 3.0)
    ax = fig.add_subplot(1, 2, 1) if pairs is not None else fig.add_subplot()
    ax.plot(il["stride"], il["bw_mib_s"], marker=".", lw=1)
    ax.set_xscale("log", base=2)
    d = inter.get("period")
    if d:
        for s in range(d, int(il["stride"].max()) + 1, d):
            ax.axvline(s, color="red", alpha=0.25, lw=1)
    ax.set_xlabel("stride (4 KiB chunks)")
    ax.set_ylabel("bandwidth (MiB/s)")
    ax.grid(alpha=0.3)
    ax.set_title("strided 4 KiB reads, 4 streams x QD8" + (f": period {d} chunks" if d else ""), fontsize=9)
    if pairs is not None:
        bx = fig.add_subplot(1, 2, 2)
        pairs = pairs.sort_values("offset")
        base = float(pairs.loc[pairs["offset"] == 0, "bw_mib_s"].iloc[0]) if (pairs["offset"] == 0).any() else float("nan")
        bx.bar([str(int(o)) for o in pairs["offset"]], pairs["bw_mib_s"] / base)
        bx.axhline(1.0, color="grey", lw=1)
        bx.set_xlabel("second stream's offset (4 KiB chunks)")
        bx.set_ylabel("bandwidth over two on one unit")
        bx.tick_params(axis="x", labelsize=7, rotation=45)
        bx.grid(axis="y", alpha=0.3)
        u = inter.get("units") or {}
        what = f": {u['degree']} units of {u['chunk_bytes'] // 1024} KiB" if u.get("degree") else ""
        bx.set_title("pinned pairs, 2 jobs x QD16 each" + what, fontsize=9)
    fig.suptitle(str(p.target.get("target")), fontsize=9)
    fig.tight_layout()
    return fig


def plot_mixed(p: Probe) -> Any:
    panel = _panel(p, "mixed", 5.0, 3.0)
    if panel is None:
        return None
    mx, fig, ax = panel
    ax.plot(mx["write_pct"], mx["read_lat_us"], marker="o", label="reads")
    ax.plot(mx["write_pct"], mx["write_lat_us"], marker="s", label="writes")
    ax.set_xlabel("writes (%), total QD64")
    ax.legend()
    return _finish(p, fig, ax, "mixed random 4 KiB load", "mean latency (us)")


def plot_sustained(p: Probe) -> Any:
    panel = _panel(p, "sustained", 5.0, 3.0)
    if panel is None:
        return None
    su, fig, ax = panel
    ax.bar(range(len(su)), su["bw_mib_s"])
    ax.set_xticks(range(len(su)), list(su["state"]), rotation=30 if len(su) > 6 else 0, fontsize=7)
    return _finish(p, fig, ax, "sustained random 4 KiB writes, QD32", "write bandwidth (MiB/s)", grid="y")
