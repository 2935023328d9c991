"""Seed 004's method: derive a drive's unwritten contract from microbenchmarks.

A probe runs a battery of experiments on a target, a simulated device or a real file or block
device driven through fio, and derives from the measurements the seven rules Wu et al. found for
the Optane SSD (HotStorage'19), each with the comparison that tests it, the measured figure, the
threshold and a verdict: holds, does not hold, or inconclusive. It also finds the drive's
parallel units (dies or memory controllers), their stripe unit and the stripe period
(``interleave.py``).

The experiments (each in fio's vocabulary; ``quick`` and ``full`` profiles):

- ``scale``: random reads (and in ``full`` writes), sizes 4 KiB-256 KiB x queue depths 1-64;
- ``randseq``: random against sequential reads and writes at QD1 and QD16;
- ``crowded``: N readers at QD1 on one 4 KiB chunk against N spread over the drive;
- ``mixed``: random 4 KiB reads and writes at a total queue depth of 64, write share 0-100 %;
- ``tiny``: random reads of 512 B-4 KiB at QD16, bandwidth;
- ``alignment``: QD1 random 4 KiB reads at offsets 0-3584 B past 4 KiB alignment;
- ``sustained``: random 4 KiB writes at QD32 on the fresh drive and after drive fills (on a
  simulated flash drive, its aged states; on a real device, back-to-back stretches of time);
- ``interleave``: 4 KiB reads that skip S-1 chunks after each, for a range of strides S (four
  streams at QD8, each in its own region); then, at the period P the dips show, pinned pairs:
  two streams at stride P, each two jobs at QD16 (one job's host path can bound a fast unit),
  the second δ chunks after the first, for δ = 0 and each divisor of P.

Each point may be measured several times (``repeat``): a rule then takes its figure from the
medians and gives a verdict only if every repeat gives the same one.

Leaves out: stripe units finer than the 4 KiB probe unit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

from ssdlab.interleave import PAIR_JOBS, PAIR_QD, combine, detect_period, detect_units, pair_offsets
from ssdlab.plotting import save

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

KiB = 1024
MiB = 1024 * KiB
UNIT = 4 * KiB  # the probe's chunk: the seed's 4 KiB access and interleaving unit

# Strides beyond 32 chunks that both profiles measure, so that periods of flash drives (a page
# on each die: 4 x 32 = 128 chunks for 32 dies of 16 KiB pages) show two multiples or more.
LONG_STRIDES = (36, 40, 48, 56, 64, 72, 80, 96, 112, 128, 144, 160, 192, 224, 256, 288, 320, 384, 448, 512)

EXPERIMENTS = ("scale", "randseq", "crowded", "mixed", "tiny", "alignment", "sustained", "interleave")
PROFILES = ("quick", "full")


@dataclass(frozen=True)
class Job:
    """One measurement, in fio's vocabulary: ``numjobs`` jobs of ``iodepth`` each over
    ``[offset, offset + size)`` (``size`` None: to the end of the target)."""

    rw: str
    bs: int = UNIT
    iodepth: int = 1
    numjobs: int = 1
    size: Optional[int] = None
    offset: int = 0
    skip: int = 0  # bytes skipped after each sequential I/O (fio's rw=read:<skip>)
    rwmixread: int = 50
    streams: bool = False  # each job reads its own region (strided reads: see `regions`)
    shift: int = 0  # streams: bytes the second half of the jobs starts after the first half

    @property
    def inflight(self) -> int:
        return self.iodepth * self.numjobs

    def regions(self, capacity: int) -> list[tuple[int, int]]:
        """Strided streams: job k reads ``[k * r, (k + 1) * r)`` with r a whole number of
        strides (at most 1024), so that at a stride that is a multiple of the stripe period every
        job's reads land on one parallel unit, and elsewhere they spread. With a ``shift``
        (pinned pairs), the second half of the jobs start that much later: a whole number of
        periods plus the offset between the two halves' units."""
        stride = self.skip + self.bs
        half = self.numjobs // 2 if self.shift else self.numjobs
        per = max(1, min(1024, max(0, capacity - self.shift) // (self.numjobs * stride)))
        r = per * stride
        return [(self.offset + k * r + (self.shift if k >= half else 0), r) for k in range(self.numjobs)]

    def stream_span(self, region: int) -> int:
        """Bytes of a region a strided stream covers: through its last read, so that a pass
        ends on a read rather than on a skip (fio would restart the job instead of wrapping)."""
        return region - self.skip


@dataclass
class Point:
    """A job of an experiment, with the experiment's own parameters for the tables."""

    experiment: str
    params: dict[str, Any]
    job: Job
    state: str = ""  # sustained: the drive state it is measured in


def _row(p: Point, m: Mapping[str, float]) -> dict[str, Any]:
    return {**p.params, **m}


def battery(profile: str = "quick", experiments: Optional[Sequence[str]] = None) -> list[Point]:
    """The points of a battery (``sustained`` is listed by its states, which targets run
    their own way)."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r}: choose quick or full")
    chosen = list(experiments or EXPERIMENTS)
    bad = [e for e in chosen if e not in EXPERIMENTS]
    if bad:
        raise ValueError(f"unknown experiment(s) {', '.join(bad)}: choose from {', '.join(EXPERIMENTS)}")
    full = profile == "full"
    pts: list[Point] = []
    if "scale" in chosen:
        sizes = [4, 8, 16, 32, 64, 128, 256] if full else [4, 16, 64, 256]
        depths = [1, 2, 4, 8, 16, 32, 64] if full else [1, 4, 16, 64]
        for rw in ("randread", "randwrite") if full else ("randread",):
            for s in sizes:
                for q in depths:
                    pts.append(Point("scale", {"rw": rw, "bs_kib": s, "qd": q}, Job(rw, s * KiB, q)))
    if "randseq" in chosen:
        for q in (1, 16):
            for rw in ("read", "randread", "write", "randwrite"):
                pts.append(Point("randseq", {"rw": rw, "qd": q}, Job(rw, UNIT, q)))
    if "crowded" in chosen:
        for n in (2, 4, 8, 16) if full else (8,):
            pts.append(Point("crowded", {"readers": n, "layout": "crowded"}, Job("randread", UNIT, 1, n, size=UNIT)))
            pts.append(Point("crowded", {"readers": n, "layout": "spread"}, Job("randread", UNIT, 1, n)))
    if "mixed" in chosen:
        for w in range(0, 101, 10 if full else 25):
            pts.append(Point("mixed", {"write_pct": w}, Job("randrw", UNIT, 16, 4, rwmixread=100 - w)))
    if "tiny" in chosen:
        for b in (512, 1024, 2048, 4096):
            pts.append(Point("tiny", {"bs": b}, Job("randread", b, 16)))
    if "alignment" in chosen:
        for qd in (1, 16):
            for off in range(0, UNIT, 512) if full else (0, 512, 2048, 3584):
                pts.append(Point("alignment", {"qd": qd, "offset": off}, Job("randread", UNIT, qd, offset=off)))
    if "sustained" in chosen:
        pts.append(Point("sustained", {}, Job("randwrite", UNIT, 32)))
    if "interleave" in chosen:
        strides = sorted(set(range(1, 65 if full else 33)) | set(LONG_STRIDES) | (set(range(64, 513, 16)) if full else set()))
        for s in strides:
            pts.append(Point("interleave", {"stride": s}, Job("read", UNIT, 8, 4, skip=(s - 1) * UNIT, streams=True)))
    return pts


class Target(Protocol):
    kind: str
    name: str

    def describe(self) -> dict[str, Any]: ...

    def prepare(self, points: Sequence[Point]) -> None: ...

    def measure(self, point: Point, progress: Optional[Callable[[float], None]]) -> dict[str, float]: ...

    def sustained(self, point: Point, profile: str, progress: Optional[Callable[[float], None]]) -> list[dict[str, Any]]: ...

    def finish(self) -> None: ...


def _summary_row(s: Mapping[str, Any]) -> dict[str, float]:
    """The figures of one run that the rules use, from a simulation summary."""
    r, w = s["read"], s["write"]
    ios = r["ios"] + w["ios"]
    mean = (r["latency_us"]["mean"] * r["ios"] + w["latency_us"]["mean"] * w["ios"]) / max(ios, 1)
    return {
        "iops": s["iops"],
        "bw_mib_s": s["bandwidth_mib_s"],
        "lat_us": mean,
        "read_iops": r["iops"],
        "write_iops": w["iops"],
        "read_lat_us": r["latency_us"]["mean"] if r["ios"] else math.nan,
        "write_lat_us": w["latency_us"]["mean"] if w["ios"] else math.nan,
        "read_p99_us": r["latency_us"]["p99"] if r["ios"] else math.nan,
        "write_p99_us": w["latency_us"]["p99"] if w["ios"] else math.nan,
    }


class SimTarget:
    """A simulated device: a preset, a TOML file or a config dict, with dotted settings.

    Each point is one run of ``ios`` I/Os (spread over the point's jobs; at least 40 per I/O in
    flight). A flash drive is probed sequentially written, as the seed preconditions; its
    sustained-write experiment measures the fresh drive and the drive after drive fills of
    random 4 KiB overwrites (the FTL's own ageing, untimed), each long enough to pass through
    the write buffer four times.
    """

    kind = "sim"

    def __init__(self, config: Any = None, settings: Optional[list[tuple[str, str]]] = None, ios: int = 3000) -> None:
        from ssdlab import api

        self.api = api
        self.settings = list(settings or [])
        self.base = api.load_config(config, settings=self.settings)
        table = self.base.table
        self.flash = table["media"]["kind"] == "nand"
        self.capacity = self.base.capacity
        self.name = config if isinstance(config, str) else self.base.description
        self.ios = ios
        # The sequential precondition of the seed (a flash drive is probed full, written in
        # order); an NVM array has no write-order state.
        self.device = self.api.load_config(self.base, set={"ftl.precondition": "sequential"}) if self.flash else self.base
        self.buffer = _bytes(table["ftl"]["write_buffer"]) if self.flash else 0
        # I/Os counted by the runs and their own wall time (preconditioning and ageing excluded).
        self.simulated_ios = 0
        self.wall_s = 0.0

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "sim",
            "target": str(self.name),
            "description": self.base.description,
            "config_hash": self.base.hash,
            "seed": self.base.seed,
            "capacity_bytes": self.capacity,
            "media": "nand" if self.flash else "nvm",
            "simulated_ios": self.simulated_ios,
            "simulation_wall_s": round(self.wall_s, 3),
            "method": f"simulated, {self.ios} I/Os a point" + ("; flash probed sequentially written (ftl.precondition = sequential)" if self.flash else ""),
        }

    def prepare(self, points: Sequence[Point]) -> None:
        pass

    def finish(self) -> None:
        pass

    def _workload(self, job: Job, ios: int, capacity: Optional[int] = None) -> dict[str, Any]:
        capacity = capacity or self.capacity
        per_job = max(ios // job.numjobs, 40 * job.iodepth)
        wl: dict[str, Any] = {
            "rw": job.rw, "bs": f"{job.bs}B", "iodepth": job.iodepth, "numjobs": job.numjobs, "offset": f"{job.offset}B",
            "rw_skip": f"{job.skip}B", "rwmixread": job.rwmixread, "number_ios": per_job, "jobs": [],
            "size": f"{job.size if job.size is not None else capacity - job.offset}B",
        }
        if job.streams:
            wl["numjobs"] = 1
            wl["jobs"] = [{"offset": f"{o}B", "size": f"{r}B"} for o, r in job.regions(capacity)]
        return wl

    def run(self, config: Any, job: Job, ios: int, progress: Optional[Callable[[float], None]], capacity: Optional[int] = None) -> dict[str, Any]:
        s = self.api.run(config, workload=self._workload(job, ios, capacity), progress=progress).summary
        self.simulated_ios += int(s["ios"])
        self.wall_s += float(s["wall_time_s"])
        return s

    def measure(self, point: Point, progress: Optional[Callable[[float], None]]) -> dict[str, float]:
        return _summary_row(self.run(self.device, point.job, self.ios, progress))

    def sustained(self, point: Point, profile: str, progress: Optional[Callable[[float], None]]) -> list[dict[str, Any]]:
        job = point.job
        if not self.flash:
            # An NVM array ages nothing, but the probe does not assume it: one long run over a
            # capacity cut to a third of what it writes (the array's layout is the same at any
            # capacity), its bandwidth over time in about 30 steps across three drive fills.
            ios = 20 * self.ios
            unit = max(MiB, _bytes(self.base.table["media"]["nvm"]["chunk"]) * int(self.base.table["media"]["nvm"]["controllers"]))
            small = max(unit, ios * job.bs // 3 // unit * unit)
            dev = self.api.load_config(self.device, set={"media.capacity": f"{small}B"})
            pilot = self.run(dev, job, self.ios, None, small)
            interval_ps = max(1, int(pilot["sim_time_s"] * 1e12 * ios / self.ios / 30))
            s = self.run(self.api.load_config(dev, set={"stats.interval": f"{interval_ps}ps"}), job, ios, progress, small)
            out, written = [], 0
            for r in (r for r in s["timeseries"]["rows"] if r["tenant"] == "all"):
                written += r["write_ios"] * job.bs
                out.append({"state": f"{r['end_s'] * 1e3:.1f} ms", "drive_writes": written / small, "bw_mib_s": r["bandwidth_mib_s"], "waf": 1.0})
            return out
        states: list[tuple[str, float, dict[str, Any]]] = [("fresh", 0.0, {"ftl.precondition": "clean"})]
        fills = [0.5, 1.0, 2.0, 3.0] if profile == "full" else []
        states += [(f"{k:g} fills", k, {"ftl.precondition": "aged", "ftl.precondition_drive_writes": k}) for k in fills]
        states.append(("steady", math.nan, {"ftl.precondition": "aged", "ftl.precondition_drive_writes": 0.0}))
        ios = max(self.ios, 4 * self.buffer // job.bs)
        out = []
        for i, (label, fills_done, extra) in enumerate(states):
            step = (lambda f, i=i: progress((i + f) / len(states))) if progress else None
            s = self.run(self.api.load_config(self.base, set=extra), job, ios, step)
            pre = (s.get("flash") or {}).get("precondition") or {}
            out.append({"state": label, "drive_writes": pre.get("drive_writes", fills_done), "bw_mib_s": s["write"]["bandwidth_mib_s"], "waf": (s.get("flash") or {}).get("waf", 1.0)})
        return out


def _bytes(text: Any) -> int:
    """Bytes of a size in the config's convention (``"64MiB"``, ``"65536B"``, an int), by the
    core's one size parser; ValueError if it is not one."""
    from ssdlab import _core

    return text if isinstance(text, int) else _core.parse_size(str(text).strip())


# ---------------------------------------------------------------------------------------------
# Rules: pure functions of the measurements.


@dataclass(frozen=True)
class Threshold:
    """A rule's verdict from one figure: it holds at or beyond ``holds``, does not hold at or
    beyond ``fails``, and is inconclusive between (``higher``: larger figures mean holds)."""

    holds: float
    fails: float
    higher: bool = True

    def verdict(self, value: float) -> str:
        if value is None or not math.isfinite(value):
            return "inconclusive"
        if self.higher:
            return "holds" if value >= self.holds else "does not hold" if value <= self.fails else "inconclusive"
        return "holds" if value <= self.holds else "does not hold" if value >= self.fails else "inconclusive"

    def text(self, unit: str = "") -> str:
        a, b = ("≥", "≤") if self.higher else ("≤", "≥")
        return f"holds {a} {self.holds:g}{unit}, does not hold {b} {self.fails:g}{unit}"


# The thresholds, each placed from what the rule's mechanism implies and the seed's figure
# (docs/probe.md explains each).
THRESHOLDS = {
    "low_request_scale": Threshold(256, 1024, higher=False),  # KiB in flight at 90 % of peak bandwidth
    "random_ok": Threshold(1.15, 1.5, higher=False),  # worst random/sequential latency ratio
    "crowded": Threshold(2.0, 1.3),  # crowded/spread latency (seed: 4.6x)
    "overall_load": Threshold(1.5, 3.0, higher=False),  # worst read/write latency ratio under a mix
    "tiny": Threshold(3.0, 1.5),  # 4 KiB bandwidth over the smallest size's (seed: 5x)
    "alignment": Threshold(1.1, 1.03),  # worst misaligned/aligned QD1 latency (seed: 1.2x)
    "forget_gc": Threshold(0.9, 0.7),  # sustained/fresh write bandwidth
}

RULES = (
    (
        "low_request_scale",
        "Access with low request scale",
        "To get low latency, issue small requests and keep few outstanding: the drive's parallelism is used up at a low request scale, beyond which latency grows for no bandwidth.",
    ),
    ("random_ok", "Random access is OK", "Random and sequential accesses perform the same."),
    ("crowded", "Avoid crowded accesses", "Never issue parallel accesses to one 4 KiB chunk."),
    ("overall_load", "Control overall load", "Reads and writes share the drive alike: control their total load, not the mix."),
    ("tiny", "Avoid tiny accesses", "Requests smaller than 4 KiB waste bandwidth."),
    ("alignment", "Issue 4 KiB-aligned requests", "Requests should align to 4 KiB (eight sectors)."),
    ("forget_gc", "Forget garbage collection", "Sustained writes keep the fresh drive's bandwidth."),
)


def _rule(key: str, test: str, figure: str, value: float, unit: str = "", experiments: Sequence[str] = (), note: str = "") -> dict[str, Any]:
    title, statement = next((t, s) for k, t, s in RULES if k == key)
    th = THRESHOLDS[key]
    verdict = th.verdict(value)
    if note and verdict == "inconclusive" and not math.isfinite(value if value is not None else math.nan):
        figure = note
    return {
        "rule": key, "title": title, "statement": statement, "test": test, "figure": figure,
        "value": None if value is None or not math.isfinite(value) else float(value), "unit": unit,
        "threshold": th.text(unit), "verdict": verdict, "experiments": list(experiments),
    }


def _missing(key: str, experiment: str) -> dict[str, Any]:
    return _rule(key, f"needs the `{experiment}` experiment", f"not measured (`{experiment}` was not run)", math.nan, experiments=[experiment])


def rule_low_request_scale(scale: pd.DataFrame) -> dict[str, Any]:
    reads = scale[scale["rw"] == "randread"] if "rw" in scale else scale
    if reads.empty:
        return _missing("low_request_scale", "scale")
    peak = reads["bw_mib_s"].max()
    inflight = reads["bs_kib"] * reads["qd"]
    at_peak = reads[reads["bw_mib_s"] >= 0.9 * peak]
    knee = float((at_peak["bs_kib"] * at_peak["qd"]).min())
    # What more scale buys past the knee: latency growth against bandwidth growth.
    knee_row = at_peak.loc[(at_peak["bs_kib"] * at_peak["qd"]).idxmin()]
    top = reads.loc[inflight.idxmax()]
    fig = (
        f"random reads reach 90 % of their peak {peak:,.0f} MiB/s at {knee:g} KiB in flight "
        f"({knee_row['bs_kib']:g} KiB x QD{knee_row['qd']:g}); at {top['bs_kib'] * top['qd']:g} KiB in flight latency is "
        f"{top['lat_us'] / knee_row['lat_us']:.1f}x for {top['bw_mib_s'] / knee_row['bw_mib_s']:.2f}x the bandwidth"
    )
    return _rule("low_request_scale", "bytes in flight where random-read bandwidth reaches 90 % of its peak", fig, knee, " KiB", ["scale"])


def rule_random_ok(rs: pd.DataFrame) -> dict[str, Any]:
    if rs.empty:
        return _missing("random_ok", "randseq")
    parts, worst = [], 1.0
    for op, (seq, rnd) in {"reads": ("read", "randread"), "writes": ("write", "randwrite")}.items():
        for qd in sorted(rs["qd"].unique()):
            a = rs[(rs["rw"] == rnd) & (rs["qd"] == qd)]
            b = rs[(rs["rw"] == seq) & (rs["qd"] == qd)]
            if a.empty or b.empty:
                continue
            la, lb = float(a["lat_us"].iloc[0]), float(b["lat_us"].iloc[0])
            if la <= 0 or lb <= 0:
                continue
            ratio = max(la / lb, lb / la)
            worst = max(worst, ratio)
            parts.append(f"{op} QD{qd:g}: random {la:.1f} us vs sequential {lb:.1f} us")
    if not parts:
        return _missing("random_ok", "randseq")
    return _rule("random_ok", "mean latency of random against sequential 4 KiB I/O (worst ratio either way)", f"{'; '.join(parts)} (worst {worst:.2f}x)", worst, "x", ["randseq"])


def rule_crowded(cr: pd.DataFrame) -> dict[str, Any]:
    if cr.empty or cr["layout"].nunique() < 2:
        return _missing("crowded", "crowded")
    n = int(cr["readers"].max())
    sub = cr[cr["readers"] == n].set_index("layout")
    c, s = float(sub.loc["crowded", "lat_us"]), float(sub.loc["spread", "lat_us"])
    ratio = c / s if s > 0 else math.nan
    fig = f"{n} readers on one 4 KiB chunk: {ratio:.1f}x the latency of spread reads ({c:.1f} us vs {s:.1f} us)"
    return _rule("crowded", f"{n} readers at QD1 on one 4 KiB chunk against {n} spread over the drive", fig, ratio, "x", ["crowded"])


def rule_overall_load(mx: pd.DataFrame) -> dict[str, Any]:
    both = mx[(mx["write_pct"] > 0) & (mx["write_pct"] < 100)].dropna(subset=["read_lat_us", "write_lat_us"])
    both = both[(both["read_lat_us"] > 0) & (both["write_lat_us"] > 0)]
    if both.empty:
        return _missing("overall_load", "mixed")
    ratios = (both["read_lat_us"] / both["write_lat_us"]).astype(float)
    worst_i = (ratios.apply(lambda r: max(r, 1 / r) if r > 0 else math.inf)).idxmax()
    r = float(ratios.loc[worst_i])
    worst = max(r, 1 / r) if r > 0 else math.inf
    row = both.loc[worst_i]
    pure = mx[mx["write_pct"] == 0]
    read_rise = f"; reads at {row['write_pct']:g} % writes take {row['read_lat_us'] / float(pure['read_lat_us'].iloc[0]):.1f}x their read-only latency" if not pure.empty else ""
    fig = f"at {row['write_pct']:g} % writes (QD64 in total) reads take {row['read_lat_us']:.1f} us and writes {row['write_lat_us']:.1f} us ({worst:.1f}x apart){read_rise}"
    return _rule("overall_load", "read against write latency under a mixed load at a fixed total queue depth (worst ratio either way)", fig, worst, "x", ["mixed"])


def rule_tiny(tn: pd.DataFrame) -> dict[str, Any]:
    tn = tn.dropna(subset=["bw_mib_s"])
    if tn.empty or UNIT not in set(tn["bs"]) or tn["bs"].min() >= UNIT:
        return _missing("tiny", "tiny")
    small = tn.loc[tn["bs"].idxmin()]
    full = tn[tn["bs"] == UNIT].iloc[0]
    ratio = float(full["bw_mib_s"] / small["bw_mib_s"]) if small["bw_mib_s"] > 0 else math.nan
    fig = f"{int(small['bs'])} B reads get {small['bw_mib_s']:.0f} MiB/s, 4 KiB reads {full['bw_mib_s']:.0f} MiB/s ({ratio:.1f}x)"
    return _rule("tiny", f"random-read bandwidth at QD16 of 4 KiB against {int(small['bs'])} B requests", fig, ratio, "x", ["tiny"])


def rule_alignment(al: pd.DataFrame) -> dict[str, Any]:
    al = al.dropna(subset=["lat_us"])
    if al.empty or 0 not in set(al["offset"]) or al["offset"].nunique() < 2:
        return _missing("alignment", "alignment")
    if "qd" not in al:
        al = al.assign(qd=1)
    worst: Optional[tuple[float, Any, float]] = None
    parts = []
    for qd, sub in al.groupby("qd"):
        aligned = sub[sub["offset"] == 0]
        mis = sub[sub["offset"] != 0]
        if aligned.empty or mis.empty:
            continue
        base = float(aligned["lat_us"].iloc[0])
        row = mis.loc[mis["lat_us"].idxmax()]
        ratio = float(row["lat_us"]) / base
        parts.append(f"QD{qd:g}: {int(row['offset'])} B off alignment {row['lat_us']:.2f} us against {base:.2f} us aligned ({ratio:.2f}x)")
        if worst is None or ratio > worst[0]:
            worst = (ratio, row, base)
    if worst is None:
        return _missing("alignment", "alignment")
    return _rule("alignment", "latency of 4 KiB random reads off 4 KiB alignment against aligned ones, at QD1 and QD16 (worst offset)", "4 KiB reads " + "; ".join(parts), worst[0], "x", ["alignment"])


def rule_forget_gc(su: pd.DataFrame) -> dict[str, Any]:
    if len(su) < 2:
        return _missing("forget_gc", "sustained")
    if str(su["state"].iloc[0]) == "fresh" or len(su) < 6:
        # Drive states: the fresh drive against the last (steady) state.
        fresh, last = float(su["bw_mib_s"].iloc[0]), float(su["bw_mib_s"].iloc[-1])
    else:
        # A timed run: its first third against its last third.
        k = len(su) // 3
        fresh, last = float(su["bw_mib_s"].iloc[:k].mean()), float(su["bw_mib_s"].iloc[-k:].mean())
    ratio = last / fresh if fresh > 0 else math.nan
    waf = su["waf"].iloc[-1] if "waf" in su else math.nan
    waf_txt = f", WAF {waf:.2f}" if waf == waf and waf is not None else ""
    written = float(su["drive_writes"].max()) if "drive_writes" in su else math.nan
    fig = f"{fresh:,.0f} MiB/s fresh, {last:,.0f} MiB/s sustained ({su['state'].iloc[-1]}{waf_txt}): {ratio:.2f}x"
    r = _rule("forget_gc", "random 4 KiB write bandwidth sustained against the fresh drive's", fig, ratio, "x", ["sustained"])
    if r["verdict"] == "holds" and written == written and written < 1.0:
        # Fewer writes than the target holds: the drive's spare may never have run out.
        r = dict(r, verdict="inconclusive", figure=fig + f" after writing {written:.2f}x the target: too little to exhaust a drive's spare space")
    return r


METRICS = ("iops", "bw_mib_s", "lat_us", "read_iops", "write_iops", "read_lat_us", "write_lat_us", "read_p99_us", "write_p99_us")


def _medians(df: pd.DataFrame) -> pd.DataFrame:
    """One row per point: the median of its repeats (tables without repeats as they are)."""
    if "repeat" not in df or df["repeat"].nunique() < 2:
        return df.drop(columns=["repeat"], errors="ignore")
    keys = [c for c in df.columns if c not in METRICS and c != "repeat"]
    return df.groupby(keys, sort=False, dropna=False).median(numeric_only=True).reset_index().drop(columns=["repeat"], errors="ignore")


def derive(data: Mapping[str, pd.DataFrame], trusted: bool = True) -> tuple[list[dict[str, Any]], Optional[dict[str, Any]]]:
    """The contract (seven rules) and the interleaving (:func:`interleaving`) from a probe's tables.

    Points measured more than once (a ``repeat`` column) give each rule its figure from their
    medians, and a verdict only if every repeat's own measurements give the same one. With
    ``trusted`` False (buffered I/O: the page cache was measured, not the device), every
    verdict is inconclusive, its figure kept."""
    import pandas as pd

    checks: list[tuple[str, Callable[[pd.DataFrame], dict[str, Any]], str]] = [
        ("scale", rule_low_request_scale, "low_request_scale"),
        ("randseq", rule_random_ok, "random_ok"),
        ("crowded", rule_crowded, "crowded"),
        ("mixed", rule_overall_load, "overall_load"),
        ("tiny", rule_tiny, "tiny"),
        ("alignment", rule_alignment, "alignment"),
        ("sustained", rule_forget_gc, "forget_gc"),
    ]
    rules = []
    for experiment, rule, key in checks:
        df = data.get(experiment, pd.DataFrame())
        if df.empty:
            rules.append(_missing(key, experiment))
            continue
        r = rule(_medians(df))
        if "repeat" in df and df["repeat"].nunique() > 1:
            each = [rule(sub.drop(columns=["repeat"]))["verdict"] for _, sub in df.groupby("repeat")]
            if len(set(each)) > 1:
                counts = ", ".join(f"{v} {each.count(v)}" for v in dict.fromkeys(each))
                r = dict(r, verdict="inconclusive", figure=r["figure"] + f" (medians of {len(each)} repeats, which disagree: {counts})")
        if not trusted and r["verdict"] != "inconclusive":
            r = dict(r, verdict="inconclusive", figure=r["figure"] + " (buffered I/O: the page cache was measured, not the device)")
        rules.append(r)
    return rules, interleaving(data)


def interleaving(data: Mapping[str, pd.DataFrame]) -> Optional[dict[str, Any]]:
    """The period of the strided reads and, from the pinned pairs, the parallel units (None
    without strided reads)."""
    import pandas as pd

    il = _medians(data.get("interleave", pd.DataFrame()))
    if il.empty:
        return None
    period = detect_period(list(il["stride"]), list(il["bw_mib_s"]))
    pairs = _medians(data.get(PAIRS, pd.DataFrame()))
    units = None
    if not pairs.empty and period.get("period"):
        pairs = pairs[pairs["period"] == period["period"]]
        strided = {int(st): float(b) for st, b in zip(il["stride"], il["bw_mib_s"])}
        units = detect_units(int(period["period"]), list(pairs["offset"]), list(pairs["bw_mib_s"]), strided, UNIT) if not pairs.empty else None
    return combine(period, units)


PAIRS = "interleave_pairs"  # the pinned pairs' table
PAIR_SLOTS = 8  # the progress the pinned pairs take, in battery points


def pair_points(strided: pd.DataFrame) -> list[Point]:
    """The pinned pairs for the period the strided reads show (none if they show none): two
    streams at stride P, the second a whole number of periods and δ chunks after the first."""
    il = _medians(strided)
    if il.empty:
        return []
    period = detect_period(list(il["stride"]), list(il["bw_mib_s"])).get("period")
    if not period:
        return []
    return [
        Point(PAIRS, {"period": period, "offset": d}, Job("read", UNIT, PAIR_QD, 2 * PAIR_JOBS, skip=(period - 1) * UNIT, streams=True, shift=(period + d) * UNIT))
        for d in pair_offsets(period)
    ]


# ---------------------------------------------------------------------------------------------
# The probe.


@dataclass
class Probe:
    """A probe's measurements (one DataFrame per experiment), its contract and the target's
    description. ``complete`` is False when it was stopped before its battery ended."""

    target: dict[str, Any]
    profile: str
    data: dict[str, pd.DataFrame] = field(default_factory=dict)
    complete: bool = True
    error: Optional[str] = None

    @property
    def trusted(self) -> bool:
        """False when the device was not what was measured (buffered I/O on a real target)."""
        return self.target.get("direct", True) is not False

    @property
    def rules(self) -> list[dict[str, Any]]:
        return derive(self.data, self.trusted)[0]

    @property
    def interleave(self) -> Optional[dict[str, Any]]:
        return derive(self.data, self.trusted)[1]

    @property
    def contract(self) -> pd.DataFrame:
        """One row per rule: title, verdict, figure, threshold."""
        import pandas as pd

        return pd.DataFrame(self.rules).set_index("rule")[["title", "verdict", "figure", "value", "threshold", "test"]]

    def to_dict(self) -> dict[str, Any]:
        rules, inter = derive(self.data, self.trusted)
        return {
            "target": self.target, "profile": self.profile, "complete": self.complete, "error": self.error, "rules": rules, "interleave": inter,
            "data": {k: json.loads(v.to_json(orient="records", double_precision=15)) for k, v in self.data.items()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Probe:
        import pandas as pd

        data = {k: pd.DataFrame(v) for k, v in d.get("data", {}).items()}
        return cls(dict(d["target"]), str(d.get("profile", "quick")), data, bool(d.get("complete", True)), d.get("error"))

    @classmethod
    def load(cls, path: str) -> Probe:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    def to_markdown(self) -> str:
        rules, inter = derive(self.data, self.trusted)
        t = self.target
        lines = [f"# Unwritten contract: {t.get('target')}", ""]
        lines.append(f"- device: {t.get('description', t.get('target'))}")
        lines.append(f"- measured: {t.get('method')}")
        lines.append(f"- battery: {self.profile}, experiments {', '.join(self.data)}" + ("" if self.complete else " (stopped early: the rules of missing experiments are inconclusive)"))
        if self.error:
            lines.append(f"- stopped by an error: {self.error}")
        lines += ["", "| # | rule | verdict | measured | threshold |", "|---|---|---|---|---|"]
        for i, r in enumerate(rules, 1):
            lines.append(f"| {i} | {r['title']} | **{r['verdict']}** | {r['figure']} | {r['threshold']} |")
        lines.append("")
        if inter is not None:
            units, period = interleave_lines(inter)
            lines += [f"**Parallel units:** {units}.", "", f"**Stripe period:** {period}.", ""]
        lines.append("How each rule is tested:")
        lines.append("")
        for r in rules:
            lines.append(f"- *{r['title']}*: {r['test']}. {r['statement']}")
        return "\n".join(lines) + "\n"

    def plots(self, directory: str, fmt: str = "png") -> list[str]:
        """Writes the heatmap, strided-read, mixed-load and sustained-write plots that the data
        allow; returns their paths."""
        import os

        from ssdlab.probe_plots import plot_mixed, plot_scale, plot_strided, plot_sustained

        out = []
        for name, fn in (("heatmap", plot_scale), ("strided", plot_strided), ("mixed", plot_mixed), ("sustained", plot_sustained)):
            fig = fn(self)
            if fig is not None:
                path = os.path.join(directory, f"{name}.{fmt}")
                save(fig, path, dpi=130)
                out.append(path)
        return out


def run_probe(
    target: Target,
    profile: str = "quick",
    experiments: Optional[Sequence[str]] = None,
    progress: Optional[Callable[[float], None]] = None,
    repeat: int = 1,
) -> Probe:
    """Runs the battery on ``target``, each point ``repeat`` times (for real targets, whose
    measurements vary; the sustained writes run once). Ctrl-C (KeyboardInterrupt) ends it with
    the finished experiments kept (``Probe.complete`` False); so does an error of the target
    (a fio run that fails), which is kept in ``Probe.error`` for the caller to report."""
    if repeat < 1:
        raise ValueError(f"repeat = {repeat}: at least 1")
    import pandas as pd

    from ssdlab.exceptions import SsdlabError

    points = battery(profile, experiments)
    probe = Probe(target.describe(), profile)
    # The pinned pairs follow the strided reads: their points depend on the period found.
    slots = len(points) + (PAIR_SLOTS if any(p.experiment == "interleave" for p in points) else 0)
    rows: dict[str, list[dict[str, Any]]] = {}

    def measure(p: Point, step: Optional[Callable[[float], None]]) -> None:
        for k in range(repeat):
            row = _row(p, target.measure(p, step))
            rows.setdefault(p.experiment, []).append(row if repeat == 1 else {**row, "repeat": k})

    try:
        target.prepare(points)
        for i, p in enumerate(points):
            step = (lambda f, i=i: progress((i + f) / slots)) if progress else None
            if p.experiment == "sustained":
                rows["sustained"] = target.sustained(p, profile, step)
            else:
                measure(p, step)
            if i + 1 == len(points) or points[i + 1].experiment != p.experiment:
                probe.data[p.experiment] = pd.DataFrame(rows[p.experiment])
            if p.experiment == "interleave" and (i + 1 == len(points) or points[i + 1].experiment != "interleave"):
                pairs = pair_points(probe.data["interleave"])
                n_pairs = len(pairs)
                for j, q in enumerate(pairs):
                    sub = (lambda f, j=j, i=i, n=n_pairs: progress((i + 1 + PAIR_SLOTS * (j + f) / n) / slots)) if progress else None
                    measure(q, sub)
                if pairs:
                    probe.data[PAIRS] = pd.DataFrame(rows[PAIRS])
    except KeyboardInterrupt:
        probe.complete = False
    except SsdlabError as e:
        probe.complete = False
        probe.error = str(e.args[0] if e.args else e)
    finally:
        target.finish()
    probe.target = target.describe()
    return probe


def target_of(spec: Any, settings: Optional[list[tuple[str, str]]] = None, **fio: Any) -> Target:
    """``fio:PATH`` -> a real file or device through fio; anything else -> a simulated device."""
    ios = fio.pop("ios", None)
    if isinstance(spec, str) and spec.startswith("fio:"):
        from ssdlab.fiotarget import FioTarget

        return FioTarget(spec[4:], **fio)
    return SimTarget(spec, settings, **({"ios": ios} if ios else {}))


def probe(
    target: Any = "p4800x",
    profile: str = "quick",
    experiments: Optional[Sequence[str]] = None,
    settings: Optional[list[tuple[str, str]]] = None,
    progress: Optional[Callable[[float], None]] = None,
    repeat: int = 1,
    **fio: Any,
) -> Probe:
    """Probes ``target`` (a preset, TOML file or config dict, or ``"fio:PATH"``) and returns the
    :class:`Probe`, each point measured ``repeat`` times. Keywords for a real target: ``size``,
    ``runtime``, ``ramp``, ``sustain``, ``destroy_data``, ``keep_file``; for a simulated one:
    ``ios`` per point."""
    return run_probe(target_of(target, settings, **fio), profile, experiments, progress, repeat)


# ---------------------------------------------------------------------------------------------
# Two targets.


def versus(a: Probe, b: Probe, rw: str = "randread") -> pd.DataFrame:
    """Seed 004's heatmap: T = (L_higher - L_lower) / L_lower for each size and queue depth,
    positive where ``a`` has the lower latency. Rows: size (KiB); columns: queue depth."""
    sa, sb = a.data.get("scale"), b.data.get("scale")
    if sa is None or sb is None:
        raise ValueError("both probes need the `scale` experiment")
    pa = sa[sa["rw"] == rw].pivot_table(index="bs_kib", columns="qd", values="lat_us", aggfunc="median")
    pb = sb[sb["rw"] == rw].pivot_table(index="bs_kib", columns="qd", values="lat_us", aggfunc="median")
    lo = pa.where(pa < pb, pb)
    t = (pb - pa).abs() / lo
    return t.where(pa <= pb, -t)


def contract_table(probes: Sequence[Probe]) -> pd.DataFrame:
    """The rules side by side: one row per rule, a verdict and figure column per probe."""
    import pandas as pd

    cols: dict[str, Any] = {}
    titles = [t for _, t, _ in RULES]
    for p in probes:
        name = str(p.target.get("target"))
        rules = p.rules
        cols[f"{name}"] = [r["verdict"] for r in rules]
        cols[f"{name}: measured"] = [r["figure"] for r in rules]
    return pd.DataFrame(cols, index=pd.Index(titles, name="rule"))


def versus_markdown(a: Probe, b: Probe) -> str:
    t = versus(a, b)
    na, nb = a.target.get("target"), b.target.get("target")
    lines = [f"# {na} against {nb}", "", f"T = (L_higher - L_lower) / L_lower of random-read latency; T > 0 where {na} is faster.", ""]
    lines.append("| size \\ QD | " + " | ".join(str(int(c)) for c in t.columns) + " |")
    lines.append("|---|" + "---|" * len(t.columns))
    for s, row in t.iterrows():
        lines.append(f"| {int(s)} KiB | " + " | ".join(f"{v:+.2f}" for v in row) + " |")
    lines += ["", "| rule | " + f"{na} | {nb} |", "|---|---|---|"]
    for ra, rb in zip(a.rules, b.rules):
        lines.append(f"| {ra['title']} | {ra['verdict']}: {ra['figure']} | {rb['verdict']}: {rb['figure']} |")
    ia, ib = a.interleave, b.interleave
    if ia or ib:
        lines.append(f"| parallel units | {ia and ia.get('degree')} | {ib and ib.get('degree')} |")
        lines.append(f"| stripe period (4 KiB chunks) | {ia and ia.get('period')} | {ib and ib.get('period')} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The command (`ssdlab probe`, and the probe `ssdlab calibrate` fits to).


def load_or_probe(spec: str, profile: str, experiments: Optional[list[str]], settings: list[tuple[str, str]], opts: dict[str, Any], label: str, repeat: int = 1) -> Probe:
    """A saved probe (a .json file written by `ssdlab probe -o`), or a new probe of ``spec``
    (``opts``: :func:`target_of`'s keywords) with a progress bar labelled ``label``."""
    from ssdlab.cliutil import Bar, UsageError

    if spec.lower().endswith(".json") and not spec.startswith("fio:"):
        try:
            return Probe.load(spec)
        except OSError as e:
            raise UsageError(f"{spec}: {e.strerror or e}") from None
        except (ValueError, KeyError, TypeError) as e:
            raise UsageError(f"{spec}: not a probe's contract.json ({e})") from None
    target = target_of(spec, settings, **opts)
    with Bar(label) as bar:
        return run_probe(target, profile, experiments, progress=bar, repeat=repeat)


def interleave_lines(il: Mapping[str, Any]) -> tuple[str, str]:
    """The parallel units and the stripe period, each a line of text with its evidence."""
    u = il.get("units") or {}
    if u.get("degree"):
        units = f"{u['degree']} of {u['chunk_bytes'] // KiB} KiB" + (f" x {u['layers']} layers" if u.get("layers", 1) > 1 else "")
        units += f" ({u['verdict']}, confidence {u['confidence']:.2f}): {u['reason']}"
    else:
        units = f"not found: {u['reason']}" if u else "not found: no pinned pairs (the strided reads show no period)"
    period = f"{il['period']} x 4 KiB" if il.get("period") else "not found"
    return units, f"{period} ({il['verdict']}, confidence {il['confidence']:.2f}): {il['reason']}"


_VERDICT_STYLE = {"holds": "green", "does not hold": "red", "inconclusive": "yellow"}


def print_contract(out: Console, p: Probe) -> None:
    """The table of a probe's rules, its parallel units and how it was measured."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=f"Unwritten contract of {p.target.get('target')} ({p.target.get('description', '')})", title_justify="left")
    for c in ("#", "rule", "verdict", "measured", "threshold"):
        t.add_column(c, overflow="fold", ratio=4 if c == "measured" else None)
    for i, r in enumerate(p.rules, 1):
        t.add_row(str(i), r["title"], f"[{_VERDICT_STYLE[r['verdict']]}]{r['verdict']}[/]", escape(r["figure"]), escape(r["threshold"]))
    out.print(t)
    il = p.interleave
    if il is not None:
        units, period = interleave_lines(il)
        out.print(f"  parallel units: {escape(units)}", highlight=False)
        out.print(f"  stripe period: {escape(period)}", highlight=False)
    out.print(f"  measured: {escape(str(p.target.get('method')))}", highlight=False)
    if not p.complete:
        out.print("  [yellow]stopped early[/yellow]: the rules of experiments not finished are inconclusive")


def print_versus(out: Console, a: Probe, b: Probe) -> None:
    """Seed 004's table of (L_higher - L_lower) / L_lower between two probes."""
    from rich.table import Table

    v = versus(a, b).sort_index(ascending=False)
    t = Table(title=f"(L_higher - L_lower) / L_lower of random reads; > 0 where {a.target.get('target')} is faster", title_justify="left")
    t.add_column("size \\ QD")
    for c in v.columns:
        t.add_column(str(int(c)), justify="right")
    for size_kib, row in v.iterrows():
        t.add_row(f"{int(size_kib)} KiB", *(f"[{'blue' if x > 0 else 'red'}]{x:+.2f}[/]" for x in row))
    out.print(t)


def write_probe(p: Probe, directory: str, fmt: str) -> list[str]:
    """contract.md, contract.json and the plots of ``p`` in ``directory``; returns their paths."""
    import os

    os.makedirs(directory, exist_ok=True)
    md, js = os.path.join(directory, "contract.md"), os.path.join(directory, "contract.json")
    with open(md, "w", encoding="utf-8") as f:
        f.write(p.to_markdown())
    with open(js, "w", encoding="utf-8") as f:
        json.dump(p.to_dict(), f, indent=1, allow_nan=True)
        f.write("\n")
    return [md, js, *p.plots(directory, fmt)]


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", text.removeprefix("fio:").strip("/")).strip("_") or "target"


def command(out: Console, err: Console, a: Probe, against: Optional[Callable[[], Probe]], output: Optional[str], fmt: str, as_json: bool) -> int:
    """``ssdlab probe``'s work once ``a`` is measured: probes ``against`` (when given and ``a``
    finished), writes the files to ``output``, prints the contracts (or JSON); returns the exit
    code: 0, 2 when a probe failed, 130 when one was interrupted."""
    import os

    from rich.markup import escape

    b = against() if against is not None and a.complete else None
    both = b is not None and "scale" in a.data and "scale" in b.data
    written: list[str] = []
    if output is not None:
        if b is None:
            written = write_probe(a, output, fmt)
        else:
            for p in (a, b):
                written += write_probe(p, os.path.join(output, _slug(str(p.target.get("target")))), fmt)
    if b is not None and both and output is not None:
        vmd = os.path.join(output, "versus.md")
        with open(vmd, "w", encoding="utf-8") as f:
            f.write(versus_markdown(a, b))
        from ssdlab.probe_plots import plot_versus

        vpng = os.path.join(output, f"versus.{fmt}")
        save(plot_versus(a, b), vpng, dpi=130)
        written += [vmd, vpng]
    if as_json:
        doc: dict[str, Any] = a.to_dict()
        if b is not None:
            doc = {"a": doc, "b": b.to_dict()}
            if both:
                doc["versus"] = json.loads(versus(a, b).to_json(orient="index"))
        out.file.write(json.dumps(doc, indent=1) + "\n")
    else:
        print_contract(out, a)
        if b is not None:
            print_contract(out, b)
            if both:
                print_versus(out, a, b)
        for w in written:
            out.print(f"  wrote {w}", highlight=False)
    kept = f"kept the finished experiments{' in ' + output if output else ''}"
    failed = next((p.error for p in (a, b) if p is not None and p.error), None)
    if failed:
        err.print(f"[bold red]error:[/bold red] {escape(failed)}; {kept}", highlight=False)
        return 2
    if not a.complete or (b is not None and not b.complete) or (against is not None and b is None):
        err.print(f"interrupted: {kept}")
        return 130
    return 0
