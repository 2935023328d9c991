"""`ssdlab reproduce STUDY`: a seed study's experiments through the sweep engine, each
published figure beside ours.

Every published value is quoted from the seed text in ``../shared/seeds`` with its file and line.
A figure whose number cannot be read from the text (a plot, or a table the extraction scrambled)
is marked so and judged on its direction only. No value is invented.

The verdict of a figure with a number:

- **matches**: ours lies on the published side of the figure's baseline and within ±25 %;
- **direction**: on the right side, but off by more than 25 %;
- **miss**: on the wrong side.

A figure with a direction only is **holds** or **miss**; one the seed gives as a range ("few
hundreds or low thousands") **matches** inside it and is a **miss** outside. A figure that needs
material the seed does not publish (its traces) is **not measured**, with the reason.

Each study's experiments are sweeps (``<study>-<part>.store`` in the output directory), so a
re-run reuses every point already measured; a part may be built from the parts before it (seed
003 calibrates ``io.cost`` on the clean drive first).
"""

from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from ssdlab.exceptions import InputError

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console


@dataclass(frozen=True)
class Figure:
    """A published figure and how to compute ours from the study's stores."""

    name: str
    published: Optional[float]  # None: not readable in the text (direction only)
    unit: str
    quote: str
    where: str  # seed file:line
    ours: Callable[[dict[str, pd.DataFrame]], float]
    baseline: float = 1.0  # the side of it that the claim is on
    above: bool = True  # the claim: ours > baseline (else <)
    unreadable: bool = False  # the text has a number here that cannot be read from it
    within: Optional[tuple[float, float]] = None  # the seed gives a range, not a number
    note: str = ""  # what the reader should know about this row (shown in the report)


def verdict(f: Figure, ours: float) -> tuple[Optional[float], str]:
    """(error in per cent, verdict) of ``ours`` against the figure."""
    if ours is None or not math.isfinite(ours):
        return None, "not measured"
    if f.within is not None:
        return None, "matches" if f.within[0] <= ours < f.within[1] else "miss"
    right_side = ours > f.baseline if f.above else ours < f.baseline
    if f.published is None:
        return None, "holds" if right_side else "miss"
    err = 100.0 * (ours - f.published) / f.published
    if not right_side:
        return err, "miss"
    return err, "matches" if abs(err) <= 25.0 else "direction"


@dataclass(frozen=True)
class Study:
    key: str
    seed: str
    title: str
    specs: dict[str, Any]  # part -> sweep spec, or a function of the parts before it giving one
    figures: tuple[Figure, ...]


SEED004 = "004_40c1719b1bcc41ff.txt"


def _rule(df: pd.DataFrame, base: str, rule: str) -> float:
    row = df[df["base"] == base]
    return float(row[f"rule.{rule}.value"].iloc[0]) if len(row) else math.nan


def _holds(df: pd.DataFrame, base: str, rule: str) -> float:
    """1 when the rule holds on ``base``, 0 when it does not, NaN when inconclusive."""
    row = df[df["base"] == base]
    v = str(row[f"rule.{rule}.verdict"].iloc[0]) if len(row) else "inconclusive"
    return {"holds": 1.0, "does not hold": 0.0}.get(v, math.nan)


def _holds_on_p4800x(rule: str) -> Callable[[dict[str, pd.DataFrame]], float]:
    """A figure's measure: :func:`_holds` of ``rule`` on the P4800X's probe."""
    return lambda s: _holds(s["probes"], "p4800x", rule)


def _t_4k_qd1(runs: pd.DataFrame) -> float:
    lat = {r["base"]: r["read.latency_us.mean"] for _, r in runs.iterrows()}
    lo, hi = lat["p4800x"], lat["970pro"]
    return (hi - lo) / lo if hi >= lo else -(lo - hi) / hi


def _optane_contract(profile: str) -> Study:
    probe = {"profile": profile} if profile == "full" else {}
    specs = {
        "probes": {"name": "optane-contract-probes", "kind": "probe", "probe": probe, "axes": {"base": ["p4800x", "970pro"]}},
        "qd1": {"name": "optane-contract-qd1", "set": {"workload.rw": "randread", "workload.bs": "4KiB", "workload.iodepth": 1, "workload.numjobs": 1, "workload.number_ios": 4000},
                "axes": {"base": ["p4800x", "970pro"]}},
    }
    rules = (
        ("low_request_scale", "Access with low request scale", 132),
        ("random_ok", "Random access is OK", 301),
        ("crowded", "Avoid crowded accesses", 313),
        ("overall_load", "Control overall load", 260),
        ("tiny", "Avoid tiny accesses", 315),
        ("alignment", "Issue 4KB aligned requests", 317),
        ("forget_gc", "Forget garbage collection", 330),
    )
    quotes = {
        "low_request_scale": "To obtain low latency, Optane SSD users should issue small requests and maintain a small number of outstanding IOs",
        "random_ok": "Optane SSD is a random access block device, where clients can observe the same performance for random and sequential workloads",
        "crowded": "Clients of Optane SSD should never issue parallel accesses to a single chunk (4KB)",
        "overall_load": "To achieve optimal latency from Optane SSD, the client must control the overall load of both reads and writes.",
        "tiny": "To exploit bandwidth of the SSD, the client must not issue requests less than 4KB.",
        "alignment": "requests issued to Optane SSD should always align to eight sectors.",
        "forget_gc": "There is no need to worry about garbage collection in Optane SSD.",
    }
    figures: list[Figure] = []
    for rule, title, line in rules:
        figures.append(Figure(f"Optane: {title} (rule holds)", None, "", quotes[rule], f"{SEED004}:{line}", _holds_on_p4800x(rule), 0.5, True))
    figures += [
        Figure("Optane: crowded readers' latency over spread", 4.6, "x", "Rule 3: Avoid Crowded Accesses (4.6x)", f"{SEED004}:312", lambda s: _rule(s["probes"], "p4800x", "crowded")),
        Figure("Optane: 4 KiB bandwidth over sub-4 KiB requests'", 5.0, "x", "Rule 5: Avoid Tiny Accesses (5x)", f"{SEED004}:314", lambda s: _rule(s["probes"], "p4800x", "tiny")),
        Figure("Optane: misaligned latency over aligned", 1.2, "x", "Rule 6: Issue 4KB Aligned Requests (1.2x)", f"{SEED004}:316", lambda s: _rule(s["probes"], "p4800x", "alignment")),
        Figure("Optane: interleaving degree (chunks in a round over the parallel units)", 7.0, "chunks", "Internal parallelism: Optane SSD (7) << Flash SSD (128)", f"{SEED004}:248",
               lambda s: float(s["probes"].set_index("base").loc["p4800x", "interleave.stripe"]), 1.0),
        Figure("Flash: interleaving degree (chunks in a round over the parallel units)", 128.0, "chunks", "Internal parallelism: Optane SSD (7) << Flash SSD (128)", f"{SEED004}:248",
               lambda s: float(s["probes"].set_index("base").loc["970pro", "interleave.stripe"]), 7.0),
        Figure("Flash: garbage collection matters (forget GC does not hold)", None, "", "Optane: LBA-based mapping vs. Flash : written-order based", f"{SEED004}:326",
               lambda s: 1.0 - _holds(s["probes"], "970pro", "forget_gc"), 0.5),
        Figure("Optane faster than flash at 4 KiB QD1: T = (L_flash - L_optane) / L_optane", None, "",
               "T > 0 when Optane has smaller latency (the heatmap's cells are scrambled in the text)", f"{SEED004}:154", lambda s: _t_4k_qd1(s["qd1"]), 0.0, unreadable=True),
    ]
    return Study("optane-contract", "004", "Towards an Unwritten Contract of Intel Optane SSD (HotStorage'19)", specs, tuple(figures))


SEED000 = "000_11428f1e0d098884.txt"
SEED001 = "001_dcfac796d180a8e8.txt"
SEED002 = "002_266ada9d63a44ca1.txt"
SEED003 = "003_73f19562a0fa1a56.txt"
MiB = 1 << 20


def _row(df: pd.DataFrame, **where: Any) -> pd.Series:
    """The (first) row of ``df`` whose columns equal ``where`` (keys with ``__`` for dots)."""
    sel = df
    for k, v in where.items():
        sel = sel[sel[k.replace("__", ".")] == v]
    if not len(sel):
        raise KeyError(f"no point with {where}")
    return sel.iloc[0]


def _gbs(r: pd.Series, op: str = "") -> float:
    """GB/s (10^9 bytes) of a run's row, of one direction with ``op``."""
    return float(r[f"{op}.bandwidth_mib_s" if op else "bandwidth_mib_s"]) * MiB / 1e9


# --- 000: ATS/ATC (Micron, FMS'23) ------------------------------------------------------------

ATC_LINES = list(range(1, 129)) + [192, 256, 384, 512, 1024, 2048, 4096]


def _atc_converge(df: pd.DataFrame) -> float:
    """The smallest size from which one VM's and 16 VMs' hit rates stay within 2 points."""
    one, many = _row(df, atc__vms=1), _row(df, atc__vms=16)
    sizes = [n for n in ATC_LINES if f"hit_rate@{n}" in df.columns]
    close = [abs(float(one[f"hit_rate@{n}"]) - float(many[f"hit_rate@{n}"])) <= 0.02 for n in sizes]
    for i, n in enumerate(sizes):
        if all(close[i:]):
            return float(n)
    return math.nan


def _atc_policy_spread(df: pd.DataFrame) -> float:
    """The hit-rate gap between the best and worst policy, averaged over the log-spaced sizes
    of the curves (what a reader sees between them on the seed's log-scale plot)."""
    cols = [c for c in df.columns if c.startswith("hit_rate@")]
    spread = df.groupby(df["atc.assoc"].astype(str))[cols].agg(lambda x: x.max() - x.min())
    return float(spread.stack().mean())  # the sizes a 4-way cache cannot have are left out


def _tlps_per_4k(df: pd.DataFrame) -> float:
    """Upstream TLPs of a 4 KiB read's data: the 4 KiB and 512 B reads' TLPs per I/O differ by
    the data's, as their SQE fetch, CQE and interrupt are the same (+1: the 512 B read's own)."""
    per = {b: float(_row(df, workload__bs=b)["metrics.pcie.up.tlps"]) / float(_row(df, workload__bs=b)["ios"]) for b in ("4KiB", "512B")}
    return per["4KiB"] - per["512B"] + 1.0


def _atc(profile: str) -> Study:
    ios = 2_000_000 if profile == "full" else 200_000
    stream = {"stack": "linux-direct", "ios": ios}
    specs: dict[str, Any] = {
        "vms": {"name": "atc-vms", "kind": "atc", "atc": {**stream, "stu": "2m", "lines": ATC_LINES}, "axes": {"atc.vms": [1, 4, 16]}},
        # Seed 000's figure 4: 4-way set associative, round robin.
        "stu": {"name": "atc-stu", "kind": "atc", "atc": {**stream, "assoc": 4, "policy": "fifo", "lines": [4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]}, "axes": {"atc.stu": ["4k", "64k", "2m"]}},
        "pinning": {"name": "atc-pinning", "kind": "atc", "atc": {**stream, "stu": "2m", "lines": [1, 2, 4, 8, 16, 32, 64], "pin_rings": True, "pin_dedicated": True}},
        "policy": {"name": "atc-policy", "kind": "atc", "atc": {**stream, "stu": "2m", "lines": [1, 2, 4, 8, 16, 32, 64, 128]},
                   "axes": {"atc.policy": ["lru", "fifo", "random"], "atc.assoc": ["full", 4]}},
        "tlp": {"name": "atc-tlp", "base": "default", "set": {"pcie.mps": "512B", "workload.rw": "randread", "workload.iodepth": 1, "workload.numjobs": 1, "workload.number_ios": 1000},
                "axes": {"workload.bs": ["4KiB", "512B"]}},
    }
    vms = lambda s, n: _row(s["vms"], atc__vms=n)  # noqa: E731
    figures = (
        Figure("IOMMU translations per 4 KiB I/O without ATS (TLPs at MPS 512 B)", 8.0, "TLP", "Given TLP = 512B, each IO is split in 8 TLP", f"{SEED000}:32", lambda s: _tlps_per_4k(s["tlp"])),
        Figure("TLPs one 2 MiB translation serves", 4096.0, "TLP", "each translation can be used for 8*2M/4K = 4096 consecutive TLP", f"{SEED000}:34", lambda s: _tlps_per_4k(s["tlp"]) * 512),
        Figure("ATC for 90 % hits: 16 VMs over one", 4.0, "x", "scaling in not linear (4x size for 16x #VM)", f"{SEED000}:62",
               lambda s: float(vms(s, 16)["lines_90"]) / float(vms(s, 1)["lines_90"]), 1.0,
               note="VMs slice one host (queue pairs, memory, buffer pool) and reuse their buffers LIFO; as whole copies of the host they need 16x (synth split = false)."),
        Figure("Distinct 2 MiB pages one VM's stream touches", None, "pages", "the number of pages is reduced to few hundreds or low thousands", f"{SEED000}:66",
               lambda s: float(vms(s, 1)["accesses"]) * (1.0 - float(vms(s, 1)["hit_rate@4096"])), within=(100.0, 10000.0),
               note="The synthesised O_DIRECT stream keeps its buffers in flight in one 2 MiB chunk (LIFO reuse); the seed's RocksDB and Cassandra"
                    " traces also carry page-cache pages spread over memory, which ssdlab does not synthesise with reuse."),
        Figure("TPC-H/SQL Server over YCSB/RocksDB: unique addresses", 3.2, "x", "3.2x as many unique address", f"{SEED000}:75", lambda s: math.nan,
               note="Needs the seed's two application traces, which are not published."),
        Figure("Lines from which 1 and 16 VMs' hit rates converge", 64.0, "lines", "Cache hit rate converging around 64 entries, consistent with RocksDB", f"{SEED000}:77",
               lambda s: _atc_converge(s["vms"]), 1.0,
               note="Ours: two synthesised streams (1 and 16 VMs), not the seed's two applications."),
        Figure("Larger STU, higher hit rate (2 MiB minus 4 KiB at 64 lines)", None, "", "The larger the STU size the better hit rate", f"{SEED000}:91",
               lambda s: float(_row(s["stu"], atc__stu="2m")["hit_rate@64"]) - float(_row(s["stu"], atc__stu="4k")["hit_rate@64"]), 0.0),
        Figure("Hit rate at 1 line, 2 MiB STU, no SQ/CQ pinning", None, "", "the hit rate without any SQ/CQ caching is somewhere below 10%", f"{SEED000}:99",
               lambda s: float(vms(s, 1)["hit_rate@1"]), within=(0.0, 0.10)),
        Figure("Hit rate at 1 line, 2 MiB STU, SQ/CQ pinned", 0.70, "", "but with SQ/CQ pinning is close to 70%", f"{SEED000}:99", lambda s: float(s["pinning"]["hit_rate@1"].iloc[0]), 0.0,
               note="Pinned SQE and CQE lookups are 2 of a 4 KiB read's 3; the data's third hits too when, as here, the buffers in flight share one 2 MiB page."),
        Figure("Hit-rate gap between LRU, round robin and random, mean over 1-128 lines", None, "", "Replacement algorithms do not make any visible difference", f"{SEED000}:111",
               lambda s: _atc_policy_spread(s["policy"]), 0.05, above=False,
               note="The gap is largest at 2 lines, fewer than the pages the stream keeps hot."),
    )
    return Study("atc", "000", "ATS/ATC for NVMe (Micron, FMS'23)", specs, figures)


# --- 001: OpenExpress (USENIX ATC'20) ---------------------------------------------------------


def _openexpress(profile: str) -> Study:
    n = 20000 if profile == "full" else 2000
    load = {"workload.numjobs": 10, "workload.iodepth": 8, "workload.number_ios": n, "nvme.io_queues": 10}  # 10 threads x QD 8 [S001]
    specs = {
        "qd8": {"name": "openexpress-qd8", "set": load, "axes": {"base": ["openexpress-hw", "openexpress-fw", "p4800x"], "workload.rw": ["randread", "randwrite"], "workload.bs": ["4KiB", "16KiB"]}},
        "clock": {"name": "openexpress-clock", "base": "openexpress-hw", "set": load,
                  "axes": {"ctrl.hardware.clock": ["50MHz", "250MHz"], "workload.rw": ["randread", "randwrite"], "workload.bs": ["4KiB", "16KiB"]}},
    }

    def run(s: dict, base: str, rw: str, bs: str) -> pd.Series:
        return _row(s["qd8"], base=base, workload__rw=rw, workload__bs=bs)

    def lat(r: pd.Series, op: str) -> float:
        return float(r[f"{op}.latency_us.mean"])

    def gain(s: dict, rw: str) -> float:
        c = s["clock"]

        def at(clock: str, b: str) -> float:
            return _gbs(_row(c, ctrl__hardware__clock=clock, workload__rw=rw, workload__bs=b))

        return 100.0 * max(at("250MHz", b) / at("50MHz", b) - 1.0 for b in ("4KiB", "16KiB"))

    q = "OpenExpress latency is 72~77 us at the"
    figures = (
        Figure("4 KiB random read bandwidth, 10 jobs x QD 8", 3.0, "GB/s", "3 GB/sec vs 2.8/sec", f"{SEED001}:880", lambda s: _gbs(run(s, "openexpress-hw", "randread", "4KiB")),
               note="Ours is link-bound at 4 KiB as at 16 KiB; the seed's 3 GB/s with 80 I/Os outstanding and 72~77 us do not satisfy"
                    " Little's law together (109 us), so a limit it does not name holds its 4 KiB reads."),
        Figure("4 KiB random write bandwidth, 10 jobs x QD 8", 2.8, "GB/s", "3 GB/sec vs 2.8/sec", f"{SEED001}:880", lambda s: _gbs(run(s, "openexpress-hw", "randwrite", "4KiB"))),
        Figure("4 KiB random read latency at QD 8 (72~77 us)", 74.5, "us", q, f"{SEED001}:882",
               lambda s: lat(run(s, "openexpress-hw", "randread", "4KiB"), "read"), note="Published: the middle of 72~77 us."),
        Figure("P4800X 4 KiB random read latency at QD 8 (120~150 us)", 135.0, "us", "queue-depth eight (vs. P4800X offers 120~150 us)", f"{SEED001}:884",
               lambda s: lat(run(s, "p4800x", "randread", "4KiB"), "read"), note="Published: the middle of 120~150 us."),
        Figure("16 KiB random write bandwidth", 4.7, "GB/s", "4.7GB/sec for random writes (258 us)", f"{SEED001}:890", lambda s: _gbs(run(s, "openexpress-hw", "randwrite", "16KiB"))),
        Figure("16 KiB random write latency", 258.0, "us", "4.7GB/sec for random writes (258 us)", f"{SEED001}:890", lambda s: lat(run(s, "openexpress-hw", "randwrite", "16KiB"), "write")),
        Figure("16 KiB random read bandwidth", 7.0, "GB/s", "7GB/sec for random reads (175 us)", f"{SEED001}:891", lambda s: _gbs(run(s, "openexpress-hw", "randread", "16KiB"))),
        Figure("16 KiB random read latency", 175.0, "us", "7GB/sec for random reads (175 us)", f"{SEED001}:891", lambda s: lat(run(s, "openexpress-hw", "randread", "16KiB"), "read")),
        Figure("Read bandwidth gained by the engines' clock, 50 to 250 MHz", 20.0, "%", "reads and writes is as high as 20% and 60%, respectively", f"{SEED001}:790",
               lambda s: gain(s, "randread"), 1.0,
               note="The slides name the range tuned (50 MHz ~ 250 MHz) but not the clock before tuning; ours: the larger gain of 4 and 16 KiB. ssdlab's engines take a command per cycle, so a"
                    " slower clock adds latency but at 50 MHz still outpaces the link: no gain is a miss of the model (its engines' occupancy per command)."),
        Figure("Write bandwidth gained by the engines' clock, 50 to 250 MHz", 60.0, "%", "reads and writes is as high as 20% and 60%, respectively", f"{SEED001}:790",
               lambda s: gain(s, "randwrite"), 1.0),
        Figure("Firmware is the bottleneck: hardware over firmware 4 KiB read bandwidth", None, "x", "bursts Firmware control become the critical performance bottleneck", f"{SEED001}:457",
               lambda s: _gbs(run(s, "openexpress-hw", "randread", "4KiB")) / _gbs(run(s, "openexpress-fw", "randread", "4KiB")), 1.0),
    )
    return Study("openexpress", "001", "OpenExpress: fully hardware-automated NVMe (USENIX ATC'20)", specs, figures)


# --- 002: Moneta (2011) -----------------------------------------------------------------------

MONETA = ["moneta", "moneta-nosched", "moneta-atomic", "moneta-spin"]


# Seed 002's cuts are of the software latency: the talk's chain 13.4 us x 0.9 x 0.9 x 0.46 (the
# spin-waiting step's "54 percent reduction in software latency") is its "about five
# microseconds of software overhead", a 62.7 % cut, which it calls the total (002:446-457).
SOFTWARE_CUTS = ("Read as a cut of the software latency, as the talk's steps compose: 13.4 us x 0.9 x 0.9 x 0.46 = 5.0 us,"
                 " its \"about five microseconds of software overhead\" after all three (002:451-457).")


def _moneta(profile: str) -> Study:
    n = 4000 if profile == "full" else 1000
    qd1 = {"workload.rw": "randread", "workload.bs": "4KiB", "workload.iodepth": 1, "workload.numjobs": 1, "workload.number_ios": 4 * n}
    threads = {"workload.numjobs": 16, "workload.iodepth": 1, "workload.number_ios": n}  # 16 threads [S002]
    specs: dict[str, Any] = {
        "qd1": {"name": "moneta-qd1", "set": qd1, "axes": {"base": MONETA}},
        "bw": {"name": "moneta-bw", "set": {**threads, "workload.rw": "randread"}, "axes": {"base": ["moneta", "moneta-nosched"], "workload.bs": ["4KiB", "512KiB"]}},
        "mix": {"name": "moneta-mix", "base": "moneta-spin", "set": {**threads, "workload.rw": "randrw", "workload.rwmixread": 50, "workload.bs": "512KiB"},
                "axes": {"ctrl.dma_queues": ["shared", "split"]}},
        # A 4 KiB reader beside a 512 KiB reader keeping four requests queued, through one
        # transfer engine with four pieces in flight (the scoreboard).
        "fair": {"name": "moneta-fair", "base": "moneta-spin", "set": {"workload.jobs": [{"name": "small", "bs": "4KiB"}, {"name": "large", "bs": "512KiB", "iodepth": 4}],
                 "workload.runtime": "20ms" if profile == "full" else "5ms", "workload.number_ios": 1000000, "ctrl.dma_queues": "shared", "ctrl.transfer_window": 4},
                 "axes": {"ctrl.split": ["fifo", "rr"]}},
        "media": {"name": "moneta-media", "base": "moneta-spin", "set": {**threads, "workload.rw": "randread", "workload.bs": "4KiB"},
                  "axes": {"media.nvm.controllers": [1, 4], "media.nvm.read_latency": ["48ns", "1us"]}},
    }

    def q(s: dict, base: str) -> pd.Series:
        return _row(s["qd1"], base=base)

    def total(s: dict, base: str) -> float:
        return float(q(s, base)["read.latency_us.mean"])

    def sw(s: dict, base: str) -> float:
        r = q(s, base)
        return float(r["breakdown_us.host_software"]) + float(r["breakdown_us.host_queueing"])

    def cut(a: float, b: float) -> float:
        return 100.0 * (a - b) / a

    def cpus_per_gbs(s: dict, base: str) -> float:
        r = _row(s["bw"], base=base, workload__bs="4KiB")
        return float(r["utilisation.host_cpu"]) * float(r["metrics.host.cpus"]) / _gbs(r)

    def media(s: dict, lat: str) -> float:
        return _gbs(_row(s["media"], media__nvm__controllers=4, media__nvm__read_latency=lat))

    figures = (
        Figure("Baseline 4 KiB read: hardware latency", 8.2, "us", "latency for a 4 kilobyte access was about 8.2 microseconds", f"{SEED002}:289-290", lambda s: total(s, "moneta") - sw(s, "moneta")),
        Figure("Baseline 4 KiB read: software latency", 13.4, "us", "latency was about thirteen point four microseconds", f"{SEED002}:291-292", lambda s: sw(s, "moneta")),
        Figure("No I/O scheduler: software latency cut", 10.0, "%", "we get about a 10% decrease in latency", f"{SEED002}:326",
               lambda s: cut(sw(s, "moneta"), sw(s, "moneta-nosched")), 0.0, note=SOFTWARE_CUTS),
        Figure("Atomic request word: further software latency cut", 10.0, "%", "get another 10% reduction in operation latency", f"{SEED002}:409-410",
               lambda s: cut(sw(s, "moneta-nosched"), sw(s, "moneta-atomic")), 0.0, note=SOFTWARE_CUTS),
        Figure("Spin-waiting: software latency cut", 54.0, "%", "gives us 54 percent reduction in software latency", f"{SEED002}:451-452",
               lambda s: cut(sw(s, "moneta-atomic"), sw(s, "moneta-spin")), 0.0),
        Figure("All three steps: software latency cut against the baseline", 62.0, "%", "total is a 62 percent reduction in latency", f"{SEED002}:453-454",
               lambda s: cut(sw(s, "moneta"), sw(s, "moneta-spin")), 0.0,
               note="The talk goes on: \"we're down to about five microseconds of software overhead from the previous thirteen\" (13.4 to 5 us is 62.7 %);"
               " on the total (21.6 us, of which 8.2 us hardware) a 62 % cut would take 13.4 us."),
        Figure("Baseline bandwidth, 16 threads of 512 KiB reads", 1.7, "GB/s", "tops out at about 1.7 gigabytes a second", f"{SEED002}:492",
               lambda s: _gbs(_row(s["bw"], base="moneta", workload__bs="512KiB"))),
        Figure("Baseline CPUs per GB/s of 4 KiB reads", 12.0, "CPUs", "for the baseline it would take about 12 of these", f"{SEED002}:548-549", lambda s: cpus_per_gbs(s, "moneta")),
        Figure("No I/O scheduler: CPUs per GB/s of 4 KiB reads", 3.0, "CPUs", "we can do a gigabyte and with just about 3 cores", f"{SEED002}:558-559", lambda s: cpus_per_gbs(s, "moneta-nosched")),
        Figure("Mixed reads and writes, one request queue", 1.6, "GB/s", "out at about 1.6 gigabytes a second", f"{SEED002}:626", lambda s: _gbs(_row(s["mix"], ctrl__dma_queues="shared"))),
        Figure("Mixed reads and writes, split read and write queues", 3.0, "GB/s", "we can get up to just under three gigabytes a second", f"{SEED002}:639-640",
               lambda s: _gbs(_row(s["mix"], ctrl__dma_queues="split")), note="Published: just under 3 GB/s."),
        Figure("Round-robin splitting: 4 KiB reader's bandwidth beside a 512 KiB reader", 12.0, "x", "we get about a 12x improvement for the small request bandwidth", f"{SEED002}:676-677",
               lambda s: float(_row(s["fair"], ctrl__split="rr")["job.small.bandwidth_mib_s"]) / float(_row(s["fair"], ctrl__split="fifo")["job.small.bandwidth_mib_s"]), 1.0),
        Figure("Bandwidth at 1 us media latency over 48 ns, four controllers", None, "x", "microsecond we don't see any drop-off in bandwidth", f"{SEED002}:758-759",
               lambda s: media(s, "1us") / media(s, "48ns"), 0.9),
    )
    return Study("moneta", "002", "Moneta: a high-performance storage array for fast NVM (2011 talk)", specs, figures)


# --- 003: OPS isolation (FAST'15) -------------------------------------------------------------

OPS_WEIGHTS = (1, 2, 3, 4)


def _ops_file(output: str, name: str, runtime: str, extra: str, bs: str = "4KiB") -> str:
    """A config of seed 003's four VMs (weights 1 to 4, each randomly writing its own namespace
    at QD 32) on the ops-isolation drive, with ``extra`` TOML appended."""
    path = os.path.join(output, f"ops-{name}.toml")
    tenants = "".join(f'[[tenants]]\nname = "vm{i + 1}"\nweight = {w}\n[tenants.workload]\nrw = "randwrite"\nbs = "{bs}"\niodepth = 32\n' for i, w in enumerate(OPS_WEIGHTS))
    text = f'extends = "ops-isolation"\ndescription = "seed 003: {name}"\n[workload]\nruntime = "{runtime}"\n{extra}\n{tenants}'
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    return path


OPS_CASES = {
    "clean": '[ftl]\nprecondition = "clean"\n',
    "aged-shared": '[ftl]\nprecondition = "aged"\n',
    "aged-isolated": '[ftl]\nprecondition = "aged"\npools = "isolated"\nops_split = "weight"\nbuffer_split = true\n',
    "clean-nocache-32k": '[ftl]\nprecondition = "clean"\nwrite_cache = false\n',
}


def _ops_cases(frames: dict, output: str, runtime: str) -> dict[str, Any]:
    """The cases, each with io.cost's model calibrated as Linux's iocost_coef_gen.py does it:
    by measuring the clean drive first, here under the case's own writes (4 KiB, or 32 KiB with
    the write cache off), every tenant at once and unthrottled."""
    bases = []
    for k, v in OPS_CASES.items():
        bs = 32768 if k.endswith("32k") else 4096
        cal = frames["calib"][frames["calib"]["base"].str.endswith(f"ops-calibrate-{bs // 1024}k.toml")]
        iops = max(float(cal["iops"].iloc[0]), 1.0)
        model = f'[host]\nshare = "weight"\ncost_wrandiops = {iops:.3f}\ncost_wseqiops = {iops:.3f}\ncost_wbps = "{iops * bs:.0f}B/s"\n'
        bases.append(_ops_file(output, k, runtime, model + v, f"{bs // 1024}KiB"))
    return {"name": "ops-cases", "axes": {"base": bases}}


def _ops_case(df: pd.DataFrame, case: str) -> pd.Series:
    """The row of one of seed 003's cases (its base is the config file ``ops-<case>.toml``)."""
    rows = df[df["base"].str.endswith(f"ops-{case}.toml")]
    if not len(rows):
        raise KeyError(f"no point for case {case}")
    return rows.iloc[0]


def _deviation(df: pd.DataFrame, case: str) -> float:
    """Mean relative distance of the tenants' bandwidth proportionality from their weights."""
    r = _ops_case(df, case)
    return sum(abs(float(r[f"tenant.vm{i + 1}.proportionality"]) - w / OPS_WEIGHTS[0]) / (w / OPS_WEIGHTS[0]) for i, w in enumerate(OPS_WEIGHTS)) / len(OPS_WEIGHTS)


def _ops_formula(df: pd.DataFrame) -> float:
    """Measured IOPS of the aged shared drive over seed 003's model 1 / (tGC + tPROG + tXfer)
    per die, with tGC the WAF's moved pages (read + program each) and its erases."""
    from ssdlab import _core, api

    r = _ops_case(df, "aged-shared")
    nand = api.load_config("ops-isolation").table["media"]["nand"]
    us = lambda t: _core.parse_time(t) / 1e6  # noqa: E731 - picoseconds to us
    t_r, t_prog, t_erase = us(nand["read_latency"][0]), us(nand["program_latency"][0]), us(nand["erase_latency"])
    t_xfer = float(_core.parse_size(nand["page_size"])) / (nand["channel_mts"] * 1e6 * nand["channel_width"] / 8) * 1e6
    dies = nand["channels"] * nand["ways"] * nand["dies_per_chip"]
    waf = float(r["flash.waf"])
    t_gc = (waf - 1.0) * (t_r + t_prog) + waf / nand["pages_per_block"] * t_erase
    return float(r["iops"]) / (dies / ((t_gc + t_prog + t_xfer) * 1e-6))


def _ops(profile: str) -> Study:
    runtime = "5s" if profile == "full" else "1s"

    def calib(frames: dict, output: str) -> dict[str, Any]:
        plain = '[host]\nshare = "none"\n[ftl]\nprecondition = "clean"\n'
        return {"name": "ops-calib", "axes": {"base": [_ops_file(output, "calibrate-4k", runtime, plain), _ops_file(output, "calibrate-32k", runtime, plain + "write_cache = false\n", "32KiB")]}}

    specs: dict[str, Any] = {"calib": calib, "cases": lambda frames, output: _ops_cases(frames, output, runtime)}
    figures = (
        Figure("Aged shared SSD: tenants' bandwidth far from their weights (mean relative distance)", None, "", "Not so, for SSD", f"{SEED003}:118",
               lambda s: _deviation(s["cases"], "aged-shared"), 0.25),
        Figure("Aged shared SSD: share of a VM's GC moves that are its own pages", 30.0, "%", "only 30% of moved pages", f"{SEED003}:167",
               lambda s: 100.0 * sum(float(_ops_case(s["cases"], "aged-shared")[f"tenant.vm{i + 1}.flash.own_fraction"]) for i in range(len(OPS_WEIGHTS))) / len(OPS_WEIGHTS), 0.0,
               note="Ours: the mean over four VMs of equal workloads; the seed's VM-F ran the Financial trace beside others."),
        Figure("Aged IOPS over the seed's model 1 / (tGC + tPROG + tXfer)", 1.0, "x", "$$IOPS = 1 / (tGC + tPROG + tXfer)$$", f"{SEED003}:217", lambda s: _ops_formula(s["cases"]), 0.0),
        Figure("OPS isolation: tenants' bandwidth near their weights (mean relative distance)", None, "", "SLO satisfied (somewhat) by OPS", f"{SEED003}:265",
               lambda s: _deviation(s["cases"], "aged-isolated"), 0.25, above=False),
        Figure("Write cache off, 32 KiB random writes: near the weights (mean relative distance)", None, "", "proportionality, generally, close to I/O weight", f"{SEED003}:349",
               lambda s: _deviation(s["cases"], "clean-nocache-32k"), 0.25, above=False),
    )
    return Study("ops-isolation", "003", "Isolating SSD tenants with over-provisioning space (FAST'15)", specs, figures)


STUDIES: dict[str, Callable[[str], Study]] = {"atc": _atc, "openexpress": _openexpress, "moneta": _moneta, "ops-isolation": _ops, "optane-contract": _optane_contract}


def _stale(page: str, store: str) -> bool:
    """Whether a store's report is missing or older than a file of the store."""
    if not os.path.exists(page):
        return True
    newest = max((os.path.getmtime(os.path.join(d, f)) for d, _, files in os.walk(store) for f in files), default=0.0)
    return newest >= os.path.getmtime(page)


def reproduce(study: str, output: str, profile: str = "quick", executor: str = "local", workers: Optional[int] = None, progress: Optional[Callable[[float], None]] = None) -> pd.DataFrame:
    """Runs ``study`` (or ``all``) into ``output`` (stores, figures and ``<study>.html``) and
    returns one row per published figure."""
    import pandas as pd

    from ssdlab import lab, report

    names = list(STUDIES) if study == "all" else [study]
    for n in names:
        if n not in STUDIES:
            raise InputError(f"study {n!r}: one of {', '.join([*STUDIES, 'all'])}")
    os.makedirs(output, exist_ok=True)
    rows: list[dict[str, Any]] = []
    steps = sum(len(STUDIES[n](profile).specs) for n in names)
    done = 0
    for n in names:
        st = STUDIES[n](profile)
        frames: dict[str, pd.DataFrame] = {}
        parts: list[str] = []
        for key, spec in st.specs.items():
            if callable(spec):
                spec = spec(frames, output)
            step = (lambda f, d=done: progress((d + f) / steps)) if progress else None
            path = os.path.join(output, f"{st.key}-{key}.store")
            frames[key] = lab.sweep(spec, store=path, executor=executor, workers=workers, progress=step)
            parts.append(os.path.join(output, f"{st.key}-{key}.html"))
            if _stale(parts[-1], path):
                report.report(path, parts[-1])
            done += 1
        first = len(rows)
        for f in st.figures:
            try:
                ours = f.ours(frames)
            except (KeyError, IndexError, ValueError, ZeroDivisionError):
                ours = math.nan
            err, v = verdict(f, ours)
            unread = "not readable in the text" if f.unreadable else "direction only"
            rows.append({
                "study": st.key, "seed": st.seed, "figure": f.name,
                "published": (f"{f.within[0]:g} to {f.within[1]:g}" if f.within else unread) if f.published is None else f"{f.published:g}{(' ' + f.unit) if f.unit else ''}",
                "where": f.where, "quote": f.quote, "ours": ours, "error_pct": err, "verdict": v, "note": f.note,
            })
        report.study_report(f"{st.title}: seed {st.seed} reproduced", pd.DataFrame(rows[first:]), parts, os.path.join(output, f"{st.key}.html"))
    table = pd.DataFrame(rows)
    table.to_csv(os.path.join(output, "figures.csv"), index=False)
    if len(names) > 1:
        sections = ["<h1>ssdlab reproduce all</h1>"]
        for n in names:
            sections.append(f"<h2><a href='{n}.html'>{html.escape(n)}</a></h2>" + report.figures_table(table[table["study"] == n]))
        report._write(os.path.join(output, "all.html"), "ssdlab reproduce all", sections, report._Figures(None))
    return table


VERDICT_STYLE = {"matches": "green", "holds": "green", "direction": "yellow", "miss": "red", "not measured": "red"}


def print_table(out: Console, table: pd.DataFrame, seconds: float, output: str) -> None:
    """The table ``ssdlab reproduce`` prints: each published figure beside ours, with its verdict."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=f"Published figures beside ssdlab's ({seconds:.0f} s)", title_justify="left")
    for c in ("study", "figure", "published", "ours", "error", "verdict", "where"):
        t.add_column(c, justify="right" if c in ("ours", "error") else "left", overflow="fold")
    for _, r in table.iterrows():
        err = "" if r["error_pct"] is None or r["error_pct"] != r["error_pct"] else f"{r['error_pct']:+.0f} %"
        ours = "" if r["ours"] is None or r["ours"] != r["ours"] else f"{r['ours']:.3g}"
        t.add_row(r["study"], escape(r["figure"]), escape(r["published"]), ours, err, f"[{VERDICT_STYLE.get(r['verdict'], 'white')}]{r['verdict']}[/]", r["where"])
    out.print(t)
    out.print(f"  quotes, stores and reports in {output}/ (figures.csv, *.html)", highlight=False)


__all__ = ["Figure", "STUDIES", "print_table", "reproduce", "verdict"]
