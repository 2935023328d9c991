"""Seed 003's question: do tenants sharing an SSD get bandwidth in proportion to their I/O
weights, and what does the drive's state and its isolation do to that?

The study runs the same tenants (weights 1, 2, 3, 4 by default, each writing 4 KiB at random
at queue depth 32 into a namespace of its own) in four device cases:

- ``clean``: a fresh drive, one shared pool;
- ``aged shared``: aged, one pool (every tenant's pages mixed in the blocks GC collects);
- ``aged isolated``: aged, a pool per tenant whose spare blocks and write-buffer part follow
  the weights (seed 003's OPS isolation);
- ``aged FDP``: aged, one pool whose spare space the tenants share, each writing through its
  own reclaim unit handle (NVMe Flexible Data Placement).

The host shares the device as cgroup v2 ``io.weight`` does under the ``io.cost`` controller,
whose device model is calibrated the way Linux's ``iocost_coef_gen.py`` does it: by measuring
the drive first (here the clean drive's random 4 KiB write rate with every tenant at once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional

from ssdlab import api
from ssdlab.plotting import figure, save

if TYPE_CHECKING:
    from rich.console import Console

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("clean", "fresh drive, one shared pool", {"ftl": {"precondition": "clean"}}),
    ("aged shared", "aged, one shared pool", {"ftl": {"precondition": "aged"}}),
    (
        "aged isolated",
        "aged, a pool per tenant; spare blocks and write buffer split by weight",
        {"ftl": {"precondition": "aged", "pools": "isolated", "ops_split": "weight", "buffer_split": True}},
    ),
    ("aged FDP", "aged, one pool, a reclaim unit handle per tenant", {"ftl": {"precondition": "aged", "placement": "fdp"}}),
]

DEFAULT_WORKLOAD = {"rw": "randwrite", "bs": "4KiB", "iodepth": 32}


def _tenants(weights: Sequence[int], workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"name": f"vm{i + 1}", "weight": int(w), "workload": dict(workload)} for i, w in enumerate(weights)]


def study(
    base: str = "ops-isolation",
    weights: Sequence[int] = (1, 2, 3, 4),
    runtime: str = "5s",
    workload: Optional[Mapping[str, Any]] = None,
    settings: Optional[list[tuple[str, str]]] = None,
    cases: Optional[Sequence[str]] = None,
    progress: Optional[Callable[[float], None]] = None,
) -> Any:
    """Runs the study (``settings``: dotted ``(key, text)`` pairs applied to every case, as the
    CLI's ``--set``); returns a DataFrame with one row per case and tenant: its weight and
    weight ratio, bandwidth and proportionality (bandwidth over the smallest-weight tenant's),
    IOPS, WAF and the share of the GC moves paid by its writes that were its own pages, and the
    case's io.cost model rate, total IOPS and WAF."""
    import pandas as pd

    workload = dict(workload or DEFAULT_WORKLOAD)
    chosen = [c for c in CASES if cases is None or c[0] in cases]
    unknown = sorted(c for c in (cases or []) if c not in {k[0] for k in CASES})
    if unknown:
        raise ValueError(f"unknown case(s) {', '.join(unknown)}: choose from {', '.join(c[0] for c in CASES)}")
    steps = len(chosen) + 1

    def step(i: int) -> Optional[Callable[[float], None]]:
        return (lambda f: progress((i + f) / steps)) if progress else None

    def config(extra: Mapping[str, Any]) -> dict[str, Any]:
        cfg: dict[str, Any] = {"extends": base, "workload": {"runtime": runtime}, "tenants": _tenants(weights, workload)}
        api._merge(cfg, extra)
        return cfg

    # Calibrate io.cost's model on the clean drive, as iocost_coef_gen.py measures a device:
    # its random 4 KiB write rate with every tenant writing at once (and, for a trace, the
    # workload's own read and write rates on the clean drive).
    calib = api.run(config({"ftl": {"precondition": "clean"}, "host": {"share": "none"}}), settings=settings, progress=step(0))
    cs = calib.summary
    iops = max(cs["write"]["iops"], 1.0) if cs["write"]["ios"] else max(cs["iops"], 1.0)
    bs = int(cs["write"]["bytes"] / max(cs["write"]["ios"], 1)) or 4096
    model = {"share": "weight", "cost_wrandiops": iops, "cost_wseqiops": iops, "cost_wbps": f"{max(iops * bs, iops * 4096):.0f}B/s"}
    if cs["read"]["ios"]:
        riops = max(cs["read"]["iops"], 1.0)
        rbs = int(cs["read"]["bytes"] / max(cs["read"]["ios"], 1)) or 4096
        model.update({"cost_rrandiops": riops, "cost_rseqiops": riops, "cost_rbps": f"{max(riops * rbs, riops * 4096):.0f}B/s"})
    rows = []
    for i, (name, _, extra) in enumerate(chosen):
        r = api.run(config(api._merge({"host": dict(model)}, extra)), settings=settings, progress=step(i + 1))
        s = r.summary
        waf = (s.get("flash") or {}).get("waf", 1.0)
        total = sum(t["iops"] for t in s["tenants"])
        for t in s["tenants"]:
            f = t.get("flash") or {}
            rows.append(
                {
                    "case": name,
                    "tenant": t["name"],
                    "weight": t["weight"],
                    "weight_ratio": t["weight_ratio"],
                    "proportionality": t["proportionality"],
                    "iops": t["iops"],
                    "bandwidth_mib_s": t["bandwidth_mib_s"],
                    "waf": f.get("waf", waf),
                    "gc_own_fraction": f.get("own_fraction", 1.0),
                    "case_model_iops": iops,
                    "case_iops": total,
                    "case_waf": waf,
                }
            )
    return pd.DataFrame(rows)


def plot(df: Any, path: Optional[str] = None) -> Any:
    """Seed 003's figure: bandwidth relative to the smallest-weight tenant, one group of bars
    per case, with each tenant's weight ratio marked; written to ``path`` (.png or .svg) when
    given. Returns the matplotlib figure."""
    cases = list(dict.fromkeys(df["case"]))
    tenants = list(dict.fromkeys(df["tenant"]))
    fig = figure(1.6 + 1.9 * len(cases), 3.6)
    ax = fig.add_subplot()
    width = 0.8 / max(len(tenants), 1)
    hatches = ["", "//", "..", "xx", "\\\\", "++", "oo", "--"]
    for j, t in enumerate(tenants):
        sub = df[df["tenant"] == t].set_index("case").reindex(cases)
        xs = [i + (j - (len(tenants) - 1) / 2) * width for i in range(len(cases))]
        ax.bar(xs, sub["proportionality"], width * 0.92, hatch=hatches[j % len(hatches)], edgecolor="white", label=f"{t} (weight {int(sub['weight'].iloc[0])})")
        ax.scatter(xs, sub["weight_ratio"], marker="_", s=220, color="black", zorder=3, label="weight ratio" if j == 0 else None)
    ax.set_xticks(range(len(cases)), cases)
    ax.set_xlabel("device case")
    ax.set_ylabel("bandwidth relative to the smallest weight (x)")
    ax.set_title("Proportionality of bandwidth to I/O weight (seed 003)")
    ax.legend(fontsize=7, ncols=2)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save(fig, path, dpi=130)


def print_table(out: Console, df: Any, plot_path: Optional[str] = None) -> None:
    """The table ``ssdlab isolation`` prints: bandwidth relative to the smallest weight, per case."""
    from rich.table import Table

    tenants = list(dict.fromkeys(df["tenant"]))
    t = Table(title="Bandwidth relative to the smallest weight (weight ratio in the last row)", title_justify="left")
    for c in ["case", *tenants, "IOPS", "WAF", "own GC"]:
        t.add_column(c, justify="left" if c == "case" else "right")
    for name, g in df.groupby("case", sort=False):
        g = g.set_index("tenant")
        t.add_row(name, *(f"{g.loc[x, 'proportionality']:.2f}" for x in tenants), f"{g['case_iops'].iloc[0]:,.0f}", f"{g['case_waf'].iloc[0]:.2f}", f"{g['gc_own_fraction'].mean():.2f}")
    first = df[df["case"] == df["case"].iloc[0]].set_index("tenant")
    t.add_row("[dim]weight ratio[/dim]", *(f"[dim]{first.loc[x, 'weight_ratio']:.2f}[/dim]" for x in tenants), "", "", "")
    out.print(t)
    out.print(f"  io.cost model: {df['case_model_iops'].iloc[0]:,.0f} write IOPS, measured on the clean drive; own GC: share of the units moved for a tenant's writes that were its own")
    if plot_path is not None:
        out.print(f"  figure: {plot_path}")


def command(
    out: Console, base: str, weights: str, runtime: str, cases: Optional[list[str]], settings: list[tuple[str, str]], trace: Optional[str], plot_path: Optional[str], as_json: bool,
    force: bool = False,
) -> None:
    """``ssdlab isolation``: checks its options (an exit-2 error naming a bad one), runs the
    study, writes the figure and prints the table (or the rows as JSON)."""
    import os

    from ssdlab.cliutil import Bar, UsageError, check_out

    try:
        w = [int(x) for x in weights.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--weights {weights!r}: give integers such as 1,2,3,4") from None
    if not w or any(x < 1 or x > 10000 for x in w):
        raise UsageError(f"--weights {weights!r}: give one to many integers between 1 and 10000")
    if plot_path is not None and os.path.splitext(plot_path)[1].lower() not in (".png", ".svg"):
        raise UsageError(f"--plot {plot_path}: the file must end in .png or .svg")
    if trace is not None and not os.path.isfile(trace):
        raise UsageError(f"--trace {trace}: no such file")
    check_out(plot_path, "--plot", force)
    known = [c[0] for c in CASES]
    for c in cases or []:
        if c not in known:
            raise UsageError(f"--case {c!r}: choose from {', '.join(known)}")
    with Bar("isolation study") as bar:
        workload = None if trace is None else {"iodepth": 32, "replay": {"trace": os.path.abspath(trace), "mode": "qd", "lba": "scale"}}
        df = study(base, w, runtime, workload=workload, settings=settings, cases=cases, progress=bar)
    if plot_path is not None:
        plot(df, plot_path)
    if as_json:
        out.file.write(df.to_json(orient="records", indent=2) + "\n")
        return
    print_table(out, df, plot_path)
