"""Fit a simulated NVM-array drive to a probe (seed 004's measurements of a real or simulated
drive), and report the fit cell by cell.

The fit reads the architecture off the probe's experiments, one step after another:

1. parallel units and their stripe unit (the probe's pinned pairs) -> ``media.nvm.controllers``
   and ``media.nvm.chunk``, chunks rotating over all of them (a probe without pinned pairs gives
   the stripe period as controllers of 4 KiB chunks);
2. one channel's bandwidth (the strided reads' bandwidth at a round over the controllers, where
   every read goes to one channel) -> ``media.nvm.bus_bandwidth``, scaled again after step 5 by what the fitted
   device's dip lacks (the dip also depends on the media latency);
3. the link: the standard PCIe generation and width whose simulated peak bandwidth (256 KiB
   random reads at QD16) is nearest the probe's peak;
4. the controller's IOPS ceiling (4 KiB random reads, 4 jobs x QD16) -> the firmware's clock,
   scaled until the simulated ceiling matches when the controller is what limits it;
5. QD1 read and write latency -> ``media.nvm.read_latency`` / ``write_latency``: the
   difference between the probe's and the candidate's QD1 latency is media time.

Leaves out: a controller data path slower than the link (the base's is dropped: the probe's peak
is taken as the link's), flash drives (their FTL, GC and write buffer need the sustained-write and mixed
experiments to fit, which this does not do), banks per channel and the host's software costs
(the base device's are kept).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from ssdlab.exceptions import InputError
from ssdlab.probe import UNIT, Job, Probe, SimTarget, _medians, battery, run_probe

if TYPE_CHECKING:
    from rich.console import Console

# PCIe generations and widths the link fit chooses from.
LINKS = [(g, w) for g in (3, 4, 5) for w in (1, 2, 4, 8, 16)]


@dataclass
class Calibration:
    """The fitted settings (dotted keys over ``base``), the figures they were fitted to, the
    fit report (one row per cell of the quick grid) and the TOML text."""

    base: str
    source: dict[str, Any]
    settings: dict[str, Any]
    figures: dict[str, float]
    steps: list[str] = field(default_factory=list)
    fit: Any = None  # DataFrame: experiment, cell, probe, fitted, error_pct

    def toml(self) -> str:
        lines = [
            f"# Calibrated by `ssdlab calibrate` from the probe of {_line(self.source.get('target'))}",
            f"# ({_line(self.source.get('description', ''))}; {_line(self.source.get('method', ''))}).",
            "# Each value below comes from a figure of that probe:",
        ]
        lines += [f"#   {s}" for s in self.steps]
        if self.fit is not None and len(self.fit):
            err = self.fit["error_pct"].abs()
            lines.append(f"# Fit over the quick grid: median error {err.median():.1f} %, worst {err.max():.1f} % ({len(self.fit)} cells).")
        desc = f'calibrated from {self.source.get("target")}: {self.settings["media.nvm.controllers"]} channels x 4 KiB chunks, PCIe {self.settings["pcie.gen"]}.0 x{self.settings["pcie.lanes"]}'
        lines += ["", f"extends = {_toml_value(self.base)}", f"description = {_toml_value(desc)}", ""]
        tables: dict[str, list[str]] = {}
        for key, value in self.settings.items():
            table, _, leaf = key.rpartition(".")
            tables.setdefault(table, []).append(f"{leaf} = {_toml_value(value)}")
        for table, entries in tables.items():
            lines.append(f"[{table}]")
            lines += entries
            lines.append("")
        return "\n".join(lines)


def _line(v: Any) -> str:
    return " ".join(str(v).split())


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))  # a TOML basic string: JSON's escapes are TOML's


def _figures(p: Probe) -> dict[str, float]:
    """The probe's figures the fit needs."""
    d = {k: _medians(v) for k, v in p.data.items()}
    need = {"scale": "the request scale grid", "interleave": "strided reads", "randseq": "QD1 writes", "mixed": "the IOPS ceiling"}
    missing = [f"`{k}` ({v})" for k, v in need.items() if k not in d or d[k].empty]
    if missing:
        raise InputError(f"calibrate: the probe lacks {', '.join(missing)}: probe with every experiment of the quick battery")
    inter = p.interleave or {}
    units = inter.get("units") or {}
    if inter.get("degree"):
        # The servers (memory controllers) and their chunk; one server's bandwidth is the strided
        # reads' at a round over them.
        degree, chunk, stripe = int(inter["degree"]), int(units["chunk_bytes"]), int(inter["stripe"])
    elif inter.get("period") and inter.get("verdict") == "detected":
        # No pinned pairs: the period taken as controllers of one 4 KiB chunk each.
        degree, chunk, stripe = int(inter["period"]), UNIT, int(inter["period"])
    else:
        raise InputError(f"calibrate: the probe found no parallel units ({units.get('reason') or inter.get('reason', 'no strided reads')}); the array's shape cannot be fitted")
    il = d["interleave"].set_index("stride")["bw_mib_s"]
    if stripe not in il.index:
        raise InputError(f"calibrate: the strided reads lack stride {stripe}, a round over the {degree} units; probe with the quick battery")
    sc = d["scale"][d["scale"]["rw"] == "randread"]
    qd1 = sc[(sc["bs_kib"] == 4) & (sc["qd"] == 1)]
    rs = d["randseq"]
    w1 = rs[(rs["rw"] == "randwrite") & (rs["qd"] == 1)]
    mx = d["mixed"]
    m0 = mx[mx["write_pct"] == 0]
    if qd1.empty or w1.empty or m0.empty:
        raise InputError("calibrate: the probe lacks 4 KiB QD1 reads, QD1 random writes or the read-only mixed point")
    if min(float(il[stripe]), float(sc["bw_mib_s"].max()), float(m0["iops"].iloc[0])) <= 0:
        raise InputError("calibrate: the probe measured no bandwidth at some point it needs (a dip, the peak or the IOPS ceiling is zero)")
    return {
        "degree": float(degree),
        "chunk": float(chunk),
        "period": float(stripe),
        "channel_mib_s": float(il[stripe]),
        "peak_mib_s": float(sc["bw_mib_s"].max()),
        "iops_ceiling": float(m0["iops"].iloc[0]),
        "read_qd1_us": float(qd1["lat_us"].iloc[0]),
        "write_qd1_us": float(w1["lat_us"].iloc[0]),
        "capacity": float(p.target.get("capacity_bytes") or 0),
    }


class _Candidate:
    def __init__(self, base: str, settings: dict[str, Any], user: list[tuple[str, str]], ios: int) -> None:
        self.base, self.settings, self.user, self.ios = base, settings, user, ios

    def target(self) -> SimTarget:
        from ssdlab import api

        cfg = api.load_config(self.base, set=self.settings, settings=self.user)
        return SimTarget(cfg, ios=self.ios)

    def run(self, job: Job) -> dict[str, Any]:
        t = self.target()
        return t.run(t.device, job, self.ios, None)


def calibrate(
    source: Probe,
    base: str = "p4800x",
    settings: Optional[list[tuple[str, str]]] = None,
    ios: int = 3000,
    report: bool = True,
    progress: Optional[Callable[[float], None]] = None,
) -> Calibration:
    """Fits ``base`` (an NVM-array device) to the probe ``source``; with ``report``, probes the
    result on the quick grid and compares it cell by cell (``Calibration.fit``)."""
    from ssdlab import api

    f = _figures(source)
    user = list(settings or [])
    if api.load_config(base, settings=user).table["media"]["kind"] != "nvm":
        raise InputError(f"calibrate: base {base!r} is not an NVM-array device (media.kind = \"nvm\"); start from p4800x or another NVM preset")
    steps: list[str] = []
    # No data path ceiling of the base's: the probe's peak is taken as the link's (below).
    s: dict[str, Any] = {"media.kind": "nvm", "ctrl.datapath_bytes": 0, "ctrl.write_datapath_bytes": 0}
    if f["capacity"] >= 64 * 1024 * 1024:
        s["media.capacity"] = f"{int(f['capacity']) // UNIT * UNIT}B"
    d, chunk = int(f["degree"]), int(f["chunk"])
    s.update({"media.nvm.controllers": d, "media.nvm.interleave": 0, "media.nvm.chunk": f"{chunk}B"})
    steps.append(f"controllers = {d}, chunk = {chunk // 1024} KiB: the parallel units of the pinned pairs (a stripe period of {int(f['period'])} x 4 KiB)")
    bus = f["channel_mib_s"] * 1024 * 1024
    s["media.nvm.bus_bandwidth"] = f"{bus:.0f}B/s"
    steps.append(f"bus_bandwidth = {bus / 1e6:.0f} MB/s: the strided reads' bandwidth at a round over the controllers (every read on one channel)")
    cand = _Candidate(base, s, user, ios)
    tick = (lambda x: progress(x)) if progress else (lambda x: None)

    # 3. The link: among those whose simulated peak is within 2 % of the probe's (or, if none,
    # the nearest), the one whose QD1 cost of a 256 KiB read over a 4 KiB one (the transfer
    # time, which the link's speed sets and the media's fixed latency cancels from) matches.
    peak_job, big, small = Job("randread", 256 * 1024, 16), Job("randread", 256 * 1024, 1), Job("randread", UNIT, 1)
    sc = source.data["scale"]
    rd = sc[sc["rw"] == "randread"]
    lat = lambda bs: float(rd[(rd["bs_kib"] == bs) & (rd["qd"] == 1)]["lat_us"].iloc[0])  # noqa: E731
    extra = lat(256) - lat(4)
    tried = []
    for i, (g, w) in enumerate(LINKS):
        s.update({"pcie.gen": g, "pcie.lanes": w})
        bw = cand.run(peak_job)["bandwidth_mib_s"]
        x = cand.run(big)["read"]["latency_us"]["mean"] - cand.run(small)["read"]["latency_us"]["mean"]
        tried.append((abs(math.log(bw / f["peak_mib_s"])), abs(x - extra), g, w, bw))
        tick(0.3 * (i + 1) / len(LINKS))
    close = [t for t in tried if t[0] < 0.02] or [min(tried)]
    # Links of one rate (3.0 x8 and 4.0 x4) simulate alike: then the base's generation.
    base_gen = int(api.load_config(base, settings=user).table["pcie"]["gen"])
    fit = min(t[1] for t in close)
    _, _, g, w, bw = min((t for t in close if t[1] <= fit + 0.01 * max(extra, 1e-9)), key=lambda t: (t[2] != base_gen, t[3], t[0]))
    s.update({"pcie.gen": g, "pcie.lanes": w})
    steps.append(
        f"PCIe {g}.0 x{w}: simulated peak {bw:,.0f} MiB/s against the probe's {f['peak_mib_s']:,.0f} MiB/s (256 KiB random reads),"
        f" and a 256 KiB QD1 read's extra time over 4 KiB nearest the probe's {extra:.1f} us"
    )

    # 4. The controller's clock, until the IOPS ceiling matches (when the controller limits it).
    ceiling_job = Job("randrw", UNIT, 16, 4, rwmixread=100)
    clock = _hz(api.load_config(base, settings=user).table["ctrl"]["firmware"]["clock"])
    for i in range(6):
        s["ctrl.firmware.clock"] = f"{clock:.0f}Hz"
        r = cand.run(ceiling_job)
        iops, busy = r["iops"], r["utilisation"].get("ctrl", 0.0)
        ratio = f["iops_ceiling"] / max(iops, 1e-9)
        tick(0.3 + 0.3 * (i + 1) / 6)
        if abs(ratio - 1) < 0.02 or (ratio > 1 and busy < 0.85) or i == 5:
            break
        clock *= ratio
    steps.append(f"ctrl.firmware.clock = {clock / 1e6:.0f} MHz: the simulated IOPS ceiling (4 jobs x QD16 4 KiB reads) {iops:,.0f} against the probe's {f['iops_ceiling']:,.0f}")

    # 5. Media latencies: what the candidate's QD1 latency lacks is media time.
    table = api.load_config(base, settings=user).table["media"]["nvm"]
    rl, wl = _seconds(table["read_latency"]), _seconds(table["write_latency"])
    for i in range(3):
        s["media.nvm.read_latency"] = f"{max(rl, 5e-8) * 1e9:.0f}ns"
        s["media.nvm.write_latency"] = f"{max(wl, 5e-8) * 1e9:.0f}ns"
        r = cand.run(Job("randread", UNIT, 1))["read"]["latency_us"]["mean"]
        w = cand.run(Job("randwrite", UNIT, 1))["write"]["latency_us"]["mean"]
        rl += (f["read_qd1_us"] - r) * 1e-6
        wl += (f["write_qd1_us"] - w) * 1e-6
        tick(0.6 + 0.1 * (i + 1) / 3)
    s["media.nvm.read_latency"] = f"{max(rl, 5e-8) * 1e9:.0f}ns"
    s["media.nvm.write_latency"] = f"{max(wl, 5e-8) * 1e9:.0f}ns"
    # The dips' bandwidth also depends on the latency just fitted: scale the channel once more
    # by what the candidate's dip lacks.
    dip = Job("read", UNIT, 8, 4, skip=(int(f["period"]) - 1) * UNIT, streams=True)
    got = cand.run(dip)["bandwidth_mib_s"]
    if got > 0:
        bus *= f["channel_mib_s"] / got
        s["media.nvm.bus_bandwidth"] = f"{bus:.0f}B/s"
    steps[1] = f"bus_bandwidth = {bus / 1e6:.0f} MB/s: the strided reads' bandwidth at a round over the controllers (every read on one channel)"
    steps.append(
        f"read_latency = {s['media.nvm.read_latency']}, write_latency = {s['media.nvm.write_latency']}:"
        f" QD1 4 KiB latency {f['read_qd1_us']:.1f} us read, {f['write_qd1_us']:.1f} us write, less the rest of the path"
    )

    cal = Calibration(base, dict(source.target), s, f, steps)
    if report:
        fitted = run_probe(cand.target(), "quick", ["scale"], progress=(lambda x: tick(0.7 + 0.3 * x)) if progress else None)
        cal.fit = fit_report(source, fitted)
    return cal


def fit_report(a: Probe, b: Probe) -> Any:
    """Cell by cell, the quick grid (random reads, 4-256 KiB x QD1-64): latency and bandwidth
    of ``a`` (the probe) and ``b`` (the fitted device), with the error in per cent."""
    import pandas as pd

    keys = {(p.params["bs_kib"], p.params["qd"]) for p in battery("quick", ["scale"])}
    rows = []
    sa, sb = _medians(a.data["scale"]), _medians(b.data["scale"])
    for (bs, qd) in sorted(keys):
        ra = sa[(sa["rw"] == "randread") & (sa["bs_kib"] == bs) & (sa["qd"] == qd)]
        rb = sb[(sb["rw"] == "randread") & (sb["bs_kib"] == bs) & (sb["qd"] == qd)]
        if ra.empty or rb.empty:
            continue
        for metric in ("lat_us", "bw_mib_s"):
            x, y = float(ra[metric].iloc[0]), float(rb[metric].iloc[0])
            rows.append({"experiment": "scale", "cell": f"{bs} KiB QD{qd}", "metric": metric, "probe": x, "fitted": y, "error_pct": 100.0 * (y - x) / x if x else math.nan})
    return pd.DataFrame(rows)


def _hz(text: Any) -> float:
    t = str(text).strip()
    for suffix, scale in (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3), ("Hz", 1.0)):
        if t.endswith(suffix):
            return float(t[: -len(suffix)]) * scale
    return float(t)


def _seconds(text: Any) -> float:
    from ssdlab import _core

    return _core.parse_time(str(text).strip()) * 1e-12


__all__ = ["Calibration", "calibrate", "fit_report"]


def command(out: Console, err: Console, source: Probe, base: str, settings: list[tuple[str, str]], output: str, as_json: bool) -> int:
    """``ssdlab calibrate``'s work once the probe is there: fits, writes ``output`` (TOML) and
    prints the fit cell by cell (or JSON); returns the exit code (2: the probe failed, 130:
    it was interrupted; nothing is written then)."""
    from rich.markup import escape
    from rich.table import Table

    from ssdlab.cliutil import Bar

    if source.error:
        err.print(f"[bold red]error:[/bold red] {escape(source.error)}; nothing written", highlight=False)
        return 2
    if not source.complete:
        err.print("interrupted: the probe did not finish; nothing written")
        return 130
    with Bar("calibrate") as bar:
        cal = calibrate(source, base, settings, progress=bar)
    with open(output, "w", encoding="utf-8") as f:
        f.write(cal.toml())
    if as_json:
        out.file.write(json.dumps({"settings": cal.settings, "figures": cal.figures, "steps": cal.steps, "fit": json.loads(cal.fit.to_json(orient="records"))}, indent=1) + "\n")
        return 0
    t = Table(title=f"Fit of {output} to the probe of {source.target.get('target')} (random reads, quick grid)", title_justify="left")
    for c in ("cell", "probe us", "fitted us", "error", "probe MiB/s", "fitted MiB/s", "error "):
        t.add_column(c, justify="left" if c == "cell" else "right")
    fit = cal.fit
    for cell, g in fit.groupby("cell", sort=False):
        lat, bw = g[g["metric"] == "lat_us"].iloc[0], g[g["metric"] == "bw_mib_s"].iloc[0]
        t.add_row(str(cell), f"{lat['probe']:.1f}", f"{lat['fitted']:.1f}", f"{lat['error_pct']:+.1f} %", f"{bw['probe']:,.0f}", f"{bw['fitted']:,.0f}", f"{bw['error_pct']:+.1f} %")
    out.print(t)
    for step in cal.steps:
        out.print(f"  {escape(step)}", highlight=False)
    e = fit["error_pct"].abs()
    out.print(f"  median error {e.median():.1f} %, worst {e.max():.1f} %; wrote {output}", highlight=False)
    return 0
