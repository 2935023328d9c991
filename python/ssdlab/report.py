"""A self-contained HTML report of a sweep store or of one run's JSON result.

One file, readable offline and attachable to an email: inline CSS, every figure an inline SVG,
no script and no external asset. Each figure is also written beside the report as SVG and PNG
(``<report>-figures/``) for papers.

For a store it shows:

- each headline metric against each axis (one line per value of a second axis);
- a heatmap of each metric over the first two axes of a two-dimensional grid;
- the latency breakdown of every point as stacked bars;
- the time series of the points that have one;
- every point's parameters and its resolved config (the TOML, folded).

For one run's JSON (``ssdlab run --json``): its device and workload, the keys set over its
preset, its latency table, breakdown (one colour per component, on every page) and time series
(up to its last I/O), and its resolved config.

Leaves out: interactive figures (a script would break the one-file, offline rule).
"""

from __future__ import annotations

import html
import io
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Optional

from ssdlab.exceptions import InputError, utf8_text
from ssdlab.plotting import figure, save

if TYPE_CHECKING:
    import pandas as pd

HEADLINE = (
    ("iops", "IOPS"),
    ("bandwidth_mib_s", "bandwidth (MiB/s)"),
    ("read.latency_us.mean", "read latency, mean (us)"),
    ("read.latency_us.p99", "read latency, p99 (us)"),
    ("write.latency_us.mean", "write latency, mean (us)"),
    ("hit_rate", "ATC hit rate at the largest size"),
    ("lines_90", "ATC lines for 90 % hits"),
)

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0; font-size: 12px; } td, th { border: 1px solid #ddd; padding: 3px 7px; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; } .fig { margin: 1em 0; } .fig svg { max-width: 100%; height: auto; }
.wide { overflow-x: auto; } details { margin: .3em 0; } pre { background: #f8f8f8; padding: .6em; overflow-x: auto; font-size: 11px; } .muted { color: #777; }
"""


class _Figures:
    """Collects figures: inline SVG for the page, SVG and PNG files beside it."""

    def __init__(self, directory: Optional[str]) -> None:
        self.directory = directory
        self.paths: list[str] = []
        if directory:
            os.makedirs(directory, exist_ok=True)

    def add(self, fig: Any, name: str) -> str:
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        svg = buf.getvalue()
        svg = svg[svg.index("<svg"):]  # drop the XML prolog: the page is HTML
        if self.directory:
            for ext in ("svg", "png"):
                path = os.path.join(self.directory, f"{name}.{ext}")
                save(fig, path, dpi=130)
                self.paths.append(path)
        return f'<div class="fig">{svg}</div>'


def _figure(w: float = 6.4, h: float = 3.4) -> Any:
    return figure(w, h)


def component_colour(name: str) -> Any:
    """One distinct colour per component of the breakdown, the same on every page (matplotlib's
    tab20, in the path's order)."""
    from matplotlib import colormaps

    from ssdlab import components

    names = components()
    return colormaps["tab20"](names.index(name) % 20 if name in names else 19)


def _breakdown_figure(rows: list[dict[str, float]], comps: list[str], labels: Optional[list[str]] = None) -> Any:
    """Stacked horizontal bars, one per row, one colour per component, the legend in a band of
    its own below the axes (never over a bar)."""
    import math

    legend_rows = math.ceil(len(comps) / 5)
    height = 1.5 + 0.22 * len(rows) + 0.22 * legend_rows
    fig = _figure(7.0, height)
    ax = fig.add_subplot()
    left = [0.0] * len(rows)
    for c in comps:
        vals = [float(r.get(c) or 0.0) for r in rows]
        ax.barh(range(len(rows)), vals, left=left, label=c, color=component_colour(c))
        left = [a + b for a, b in zip(left, vals)]
    ax.set_xlabel("mean latency per I/O (us)")
    if labels is None:
        ax.set_yticks([])
    else:
        ax.set_yticks(range(len(rows)), labels, fontsize=7)
        ax.invert_yaxis()
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncols=min(5, len(comps)), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, (0.22 * legend_rows + 0.1) / height, 1, 1))
    return fig


def _until_last_io(rows: pd.DataFrame) -> pd.DataFrame:
    """A point's series up to its last interval with an I/O (the intervals after it are the
    drive going idle, not the workload)."""
    if "ios" not in rows or rows.empty:
        return rows
    busy = [i for i, n in enumerate(rows["ios"]) if n and n > 0]
    return rows.iloc[: busy[-1] + 1] if busy else rows


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def _numeric(series: pd.Series) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(series))


def _axis_values(df: pd.DataFrame, axis: str, spec: list[Any]) -> tuple[list[Any], Any]:
    """An axis's values in order, and how to place them on a plot's x axis: numbers as they
    are, anything else by its rank in the spec."""
    present = set(df[axis])
    if _numeric(df[axis]):
        return sorted(present), None
    vals = [v for v in spec if v in present] + sorted(str(v) for v in present if v not in spec)
    return vals, {v: i for i, v in enumerate(vals)}


def _table(df: pd.DataFrame, left: tuple[str, ...] = ()) -> str:
    head = "".join(f'<th class="{"l" if c in left else ""}">{html.escape(str(c))}</th>' for c in df.columns)
    rows = []
    for _, r in df.iterrows():
        cells = []
        for c in df.columns:
            v = r[c]
            text = f"{v:,.3f}" if isinstance(v, float) else html.escape(str(v))
            cells.append(f'<td class="{"l" if c in left else ""}">{text}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<div class='wide'><table><tr>{head}</tr>{''.join(rows)}</table></div>"


def store_report(path: str, output: str, figures: bool = True) -> list[str]:
    """Writes the report of the store at ``path`` to ``output``; returns the files written."""
    from ssdlab import lab

    meta_path = os.path.join(path, "sweep.json")
    if not os.path.isfile(meta_path):
        raise InputError(f"{path}: not a sweep store (no sweep.json)")
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        if not isinstance(meta, dict):
            raise ValueError("not a table")
    except (OSError, ValueError) as e:
        raise InputError(f"{meta_path}: does not read ({e}); run the sweep again to rewrite it") from None
    df = lab.open_store(path)
    if df.empty:
        raise InputError(f"{path}: the store holds no points yet")
    try:
        series = lab.open_store(path, "series")
    except InputError:
        series = None
    axes = [a for a in meta.get("axes", {}) if a in df.columns]
    # Rows in the spec's order (the store keeps them by point id).
    ranks = {a: {v: i for i, v in enumerate(_axis_values(df, a, meta["axes"][a])[0])} for a in axes}
    keys = [df[a].map(ranks[a]) for a in axes] + ([df["repeat"]] if "repeat" in df else [])
    if keys:
        import pandas as pd

        order = pd.concat(keys, axis=1).apply(tuple, axis=1).sort_values().index
        df = df.loc[order].reset_index(drop=True)
    figs = _Figures(os.path.splitext(output)[0] + "-figures" if figures else None)
    parts = [f"<h1>Sweep {html.escape(str(meta.get('name', '')))}</h1>"]
    parts.append(f'<p class="muted">base {html.escape(str(meta.get("base")))}, {len(df)} points, kind {html.escape(str(meta.get("kind")))}, '
                 f"ssdlab {html.escape(str(df['version'].iloc[0]))}; fixed settings: {html.escape(json.dumps(meta.get('set', {})))}</p>")
    metrics = [(m, label) for m, label in HEADLINE if m in df.columns and df[m].fillna(0).abs().sum() > 0]
    mean = df.groupby(axes, sort=False, dropna=False).mean(numeric_only=True).reset_index() if axes else df
    if axes and metrics:
        parts.append("<h2>Metrics against each axis</h2>")
        for axis in axes:
            others = [a for a in axes if a != axis]
            group = others[0] if others else None
            for m, label in metrics:
                fig = _figure()
                ax = fig.add_subplot()
                vals, rank = _axis_values(mean, axis, meta["axes"][axis])
                keys = _axis_values(mean, group, meta["axes"][group])[0] if group else [None]
                # With three axes or more, the ones not drawn are averaged over.
                drawn = mean.groupby([axis] + ([group] if group else []), sort=False, dropna=False)[m].mean().reset_index()
                for key in keys:
                    sub = (drawn[drawn[group] == key] if group else drawn).set_index(axis).reindex(vals)
                    xs = [rank[v] for v in vals] if rank else vals
                    ax.plot(xs, sub[m], marker="o", label=f"{group} = {key}" if group else None)
                if rank:
                    ax.set_xticks(range(len(vals)), [str(v) for v in vals], fontsize=8)
                elif len(vals) > 2 and min(vals) > 0 and max(vals) / min(vals) >= 50:
                    ax.set_xscale("log")
                ax.set_xlabel(axis)
                ax.set_ylabel(label)
                ax.grid(alpha=0.3)
                if group:
                    ax.legend(fontsize=7)
                fig.tight_layout()
                parts.append(figs.add(fig, f"{_slug(m)}-vs-{_slug(axis)}"))
    if len(axes) >= 2 and metrics:
        parts.append("<h2>Heatmaps</h2>")
        a0, a1 = axes[0], axes[1]
        for m, label in metrics:
            grid = mean.pivot_table(index=a0, columns=a1, values=m, aggfunc="mean")
            grid = grid.reindex(index=_axis_values(mean, a0, meta["axes"][a0])[0], columns=_axis_values(mean, a1, meta["axes"][a1])[0])
            fig = _figure(1.8 + 0.8 * len(grid.columns), 1.2 + 0.45 * len(grid.index))
            ax = fig.add_subplot()
            im = ax.imshow(grid.values, aspect="auto", cmap="viridis")
            for i in range(grid.shape[0]):
                for j in range(grid.shape[1]):
                    v = grid.values[i, j]
                    if v == v:
                        ax.text(j, i, f"{v:,.3g}", ha="center", va="center", fontsize=7, color="white")
            ax.set_xticks(range(len(grid.columns)), [str(c) for c in grid.columns], fontsize=8)
            ax.set_yticks(range(len(grid.index)), [str(c) for c in grid.index], fontsize=8)
            ax.set_xlabel(a1)
            ax.set_ylabel(a0)
            ax.set_title(label, fontsize=9)
            fig.colorbar(im, ax=ax, shrink=0.8)
            fig.tight_layout()
            parts.append(figs.add(fig, f"heatmap-{_slug(m)}"))
    parts.append(_breakdown(df, axes, figs))
    if series is not None and not series.empty:
        parts.append(_series(series, df, axes, figs))
    parts.append("<h2>Every point</h2>")
    shown = [c for c in ("point_id", *axes, "repeat", "seed", "config_hash", *(m for m, _ in metrics)) if c in df.columns]
    parts.append(_table(df[shown], left=("point_id", "config_hash")))
    parts.append(_configs(meta, df, axes))
    return _write(output, f"ssdlab sweep {meta.get('name', '')}", parts, figs)


def _breakdown(df: pd.DataFrame, axes: list[str], figs: _Figures) -> str:
    from ssdlab import components

    cols = [f"breakdown_us.{c}" for c in components() if f"breakdown_us.{c}" in df.columns]
    cols = [c for c in cols if c != "breakdown_us.total" and df[c].fillna(0).abs().sum() > 0]
    if not cols:
        return ""
    sub = df.head(40)
    labels = [", ".join(f"{r[a]}" for a in axes) + (f" #{int(r['repeat'])}" if "repeat" in r and r["repeat"] else "") if axes else str(r["point_id"])[:8] for _, r in sub.iterrows()]
    fig = _breakdown_figure([{c.removeprefix("breakdown_us."): r[c] for c in cols} for _, r in sub.iterrows()], [c.removeprefix("breakdown_us.") for c in cols], labels)
    note = f' <span class="muted">(the first 40 of {len(df)} points)</span>' if len(df) > 40 else ""
    return f"<h2>Where the time goes</h2><p>Mean microseconds per I/O in each component of the path{note}.</p>" + figs.add(fig, "breakdown")


def _series(series: pd.DataFrame, df: pd.DataFrame, axes: list[str], figs: _Figures) -> str:
    rows = series[series["tenant"] == "all"] if "tenant" in series else series
    # In the points' order (the spec's), labelled by their axes.
    have = set(rows["point_id"])
    ids = ([p for p in df["point_id"] if p in have] or list(dict.fromkeys(rows["point_id"])))[:10]
    names = {r["point_id"]: ", ".join(f"{a} = {r[a]}" for a in axes) or r["point_id"][:8] for _, r in df.iterrows()}
    if "lines" in rows and "hit_rate" in rows:
        fig = _figure()
        ax = fig.add_subplot()
        for pid in ids:
            r = rows[rows["point_id"] == pid].sort_values("lines")
            ax.plot(r["lines"], r["hit_rate"], label=names.get(pid, pid[:8]), lw=1.2, marker="o", ms=2)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ATC size (lines)")
        ax.set_ylabel("hit rate (fraction of lookups)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        return "<h2>Hit-rate curves</h2>" + figs.add(fig, "hit-rate-curves")
    out = ["<h2>Time series</h2>"]
    for metric, label in (("bandwidth_mib_s", "bandwidth (MiB/s)"), ("lat_p99_us", "p99 latency (us)")):
        if metric not in rows:
            continue
        fig = _figure()
        ax = fig.add_subplot()
        for pid in ids:
            r = _until_last_io(rows[rows["point_id"] == pid])
            ax.plot(r["end_s"], r[metric], label=names.get(pid, pid[:8]), lw=1)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        out.append(figs.add(fig, f"series-{_slug(metric)}"))
    return "".join(out)


def _configs(meta: dict[str, Any], df: pd.DataFrame, axes: list[str]) -> str:
    from ssdlab import api

    out = ["<h2>Configs</h2><p>The resolved config of every point (click to unfold).</p>"]
    for _, r in df.head(200).iterrows():
        values = {a: r[a].item() if hasattr(r[a], "item") else r[a] for a in axes}
        base = str(values.pop("base", meta["base"]))
        settings = {**meta.get("set", {}), "workload.randseed": int(r["seed"]), **values}
        try:
            text = api.load_config(base, set=settings).toml
        except Exception as e:  # noqa: BLE001 - the base may have moved since the sweep
            text = f"(cannot rebuild this config: {e})"
        title = ", ".join(f"{a} = {r[a]}" for a in axes) or "the point"
        out.append(f"<details><summary>{html.escape(title)} <span class='muted'>{html.escape(str(r.get('config_hash', '')))}</span></summary><pre>{html.escape(text)}</pre></details>")
    return "".join(out)


def _workload(table: dict[str, Any]) -> str:
    """The run's workload in fio's words: one line per job kind (or the tenants')."""
    w = table.get("workload") or {}
    def line(j: dict[str, Any]) -> str:
        ends = [f"{k}={j[k]}" for k in ("number_ios", "size", "runtime", "loops") if j.get(k) not in (None, 0, "0ps", 1) or (k == "number_ios" and j.get(k))]
        return " ".join(f"{k}={j[k]}" for k in ("rw", "bs", "iodepth", "numjobs", "ioengine") if j.get(k) is not None) + (" " + " ".join(ends) if ends else "")
    if (w.get("replay") or {}).get("trace"):
        return f"replays {w['replay']['trace']} ({w['replay'].get('mode', 'timed')})"
    tenants = table.get("tenants") or []
    if tenants:
        return "; ".join(f"tenant {t.get('name')}: " + line({**w, **(t.get('workload') or {})}) for t in tenants)
    jobs = w.get("jobs") or []
    return "; ".join(f"{j.get('name', 'job')}: " + line({**w, **j}) for j in jobs) if jobs else line(w)


def result_report(summary: dict[str, Any], output: str, figures: bool = True) -> list[str]:
    """Writes the report of one run's summary (``ssdlab run --json``) to ``output``: the device
    and workload, the keys set over the base preset, throughput and latency, where the time
    went, the time series up to the last I/O and the resolved config."""
    import pandas as pd

    from ssdlab import api, components

    figs = _Figures(os.path.splitext(output)[0] + "-figures" if figures else None)
    cfg = summary.get("config") or {}
    table: dict[str, Any] = {}
    if cfg.get("toml"):
        if sys.version_info >= (3, 11):
            import tomllib
        else:
            import tomli as tomllib
        try:
            table = tomllib.loads(cfg["toml"])
        except tomllib.TOMLDecodeError:
            table = {}
    device = cfg.get("description") or cfg.get("base") or "(a run without its config: ssdlab run --json writes it)"
    parts = [f"<h1>Run on {html.escape(str(cfg.get('base', '?')))}</h1>",
             f"<p>{html.escape(str(device))}</p>",
             f"<p class='muted'>config {html.escape(str(summary.get('config_hash')))}, seed {summary.get('seed')}, {summary.get('ios'):,} I/Os in "
             f"{summary.get('sim_time_s', 0) * 1e3:,.3f} ms simulated, ssdlab {html.escape(str(summary.get('version')))}</p>"]
    if table:
        parts.append(f"<h2>Workload</h2><p>{html.escape(_workload(table))}</p>")
    diff = cfg.get("diff") or []
    if diff:
        rows_d = pd.DataFrame([{"key": d["key"], f"{cfg.get('base')}": json.dumps(d["base"]), "this run": json.dumps(d["value"])} for d in diff])
        parts.append(f"<h2>Set over {html.escape(str(cfg.get('base')))}</h2>" + _table(rows_d, left=tuple(rows_d.columns)))
    elif cfg:
        parts.append(f"<p class='muted'>The config is {html.escape(str(cfg.get('base')))} as it is.</p>")
    rows = []
    for op in api.OPS:
        o = summary.get(op) or {}
        if o.get("ios"):
            lat = o["latency_us"]
            rows.append({"op": op, "I/Os": o["ios"], "IOPS": o["iops"], "MiB/s": o["bandwidth_mib_s"], **{k: lat[k] for k in ("mean", "p50", "p99", "p999", "max")}})
    parts.append("<h2>Throughput and latency (us)</h2>" + _table(pd.DataFrame(rows), left=("op",)))
    bd = summary.get("breakdown_us") or {}
    comps = [c for c in components() if c != "total" and bd.get(c)]
    if comps:
        fig = _breakdown_figure([bd], comps)
        shares = ", ".join(f"{c} {100 * bd[c] / sum(bd[x] for x in comps):.0f} %" for c in sorted(comps, key=lambda c: -bd[c])[:3])
        parts.append(f"<h2>Where the time goes</h2><p>Mean microseconds per I/O in each component; the largest: {html.escape(shares)}.</p>" + figs.add(fig, "breakdown"))
    ts = (summary.get("timeseries") or {}).get("rows")
    if ts:
        df = pd.DataFrame(ts).assign(point_id="run")
        parts.append(_series(df, pd.DataFrame([{"point_id": "run"}]), [], figs))
    if cfg.get("toml"):
        parts.append(f"<h2>Config</h2><details><summary>the resolved config (TOML)</summary><pre>{html.escape(cfg['toml'])}</pre></details>")
    return _write(output, f"ssdlab run on {cfg.get('base', summary.get('config_hash'))}", parts, figs)


def _write(output: str, title: str, parts: list[str], figs: _Figures) -> list[str]:
    page = f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n"
    with open(output, "w", encoding="utf-8") as f:
        f.write(page)
    return [output, *figs.paths]


VERDICT_COLOURS = {"matches": "#d8f0d8", "holds": "#d8f0d8", "direction": "#fbeec8", "miss": "#f6d2d2", "not measured": "#eeeeee"}


def figures_table(table: pd.DataFrame) -> str:
    """The published figures beside ours, as an HTML table coloured by verdict."""
    out = ["<table><tr><th class='l'>figure</th><th>published</th><th>ours</th><th>error</th><th class='l'>verdict</th><th class='l'>quote, where in the seed</th><th class='l'>note</th></tr>"]
    for _, r in table.iterrows():
        ours = r["ours"]
        ours_s = "" if ours is None or ours != ours else f"{ours:,.4g}"
        err = r["error_pct"]
        err_s = "" if err is None or err != err else f"{err:+.0f} %"
        colour = VERDICT_COLOURS.get(str(r["verdict"]), "#fff")
        out.append(
            f"<tr><td class='l'>{html.escape(str(r['figure']))}</td><td>{html.escape(str(r['published']))}</td><td>{ours_s}</td><td>{err_s}</td>"
            f"<td class='l' style='background:{colour}'>{html.escape(str(r['verdict']))}</td>"
            f"<td class='l'>&ldquo;{html.escape(str(r['quote']))}&rdquo; <span class='muted'>{html.escape(str(r['where']))}</span></td>"
            f"<td class='l'>{html.escape(str(r.get('note') or ''))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def study_report(title: str, table: pd.DataFrame, parts: list[str], output: str) -> list[str]:
    """One self-contained page: a reproduced study's figures table, then the report of each of
    its sweep stores (their bodies inlined, figures as inline SVG)."""
    body = [f"<h1>{html.escape(title)}</h1>", "<h2>Published figures beside ssdlab's</h2>", figures_table(table)]
    for path in parts:
        with open(path, encoding="utf-8") as f:
            page = f.read()
        inner = page.split("<body>", 1)[-1].rsplit("</body>", 1)[0]
        body.append("<hr>" + inner.replace("<h1>", "<h2>", 1).replace("</h1>", "</h2>", 1))
    return _write(output, title, body, _Figures(None))


def report(source: str, output: str, figures: bool = True) -> list[str]:
    """The report of a sweep store (a directory) or a run's JSON file (``ssdlab run --json``)."""
    if os.path.isdir(source):
        return store_report(source, output, figures)
    try:
        with open(source, "rb") as f:
            summary = json.loads(utf8_text(f.read(), source))
    except OSError as e:
        raise InputError(f"{source}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{source}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(summary, dict) or "breakdown_us" not in summary:
        raise InputError(f"{source}: not a run's JSON (ssdlab run --json) nor a sweep store")
    return result_report(summary, output, figures)


__all__ = ["figures_table", "report", "result_report", "store_report", "study_report"]
