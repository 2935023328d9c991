"""Validation of the device library against published figures.

Each drive of the library (``p4800x``, ``sz985``, ``p4500`` with its 1 and 4 TB models, ``p3700``,
``micron9100``, ``970pro``, ``pm9a3``) keeps three kinds of numbers apart. Facts (architecture and media, cited) are in its
preset. Calibrated unknowns, what no source publishes (the controller's data path, the
firmware's work per written unit, per journal record and per GC move, a one-shot program time),
are in its preset too, each fitted to one figure of the drive's small declared *training set*
(``train=True`` below; at most a third of its figures) by :func:`ssdlab.fit.fit`, which anyone
can re-run (``ssdlab validate --fit DRIVE``), or carried from another drive's fit
(``CARRIED``). Every other figure is a *prediction*, and only predictions validate: the summary
gives the share of them within 15 % and 25 % of what was published.

Runs use the host I/O engine each source used (``ENGINE``).

``ssdlab validate [DEVICE ...]`` prints the tables; ``-o docs/validation.md`` writes them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import api
from .fit import Unknown

if TYPE_CHECKING:
    from rich.console import Console

MB = 1e6


@dataclass(frozen=True)
class Figure:
    """A published performance figure and the run that measures it in ssdlab."""

    name: str
    #: "lat" (mean completion latency, us), "iops", "mbs" (MB/s, 10^6 B), or a completion
    #: latency percentile in us ("p50", "p99", "p99.99", "p99.999": a QoS row).
    metric: str
    published: float
    #: Where the figure comes from and under what conditions, as published.
    source: str
    #: The workload (fio vocabulary) and any other settings of the run.
    workload: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)
    #: What the run changes from the published conditions, and why.
    note: str = ""
    #: In the drive's training set: a calibrated unknown is fitted to it (not a prediction).
    train: bool = False


def _qd1(rw: str, n: int = 4000) -> dict[str, Any]:
    return {"rw": rw, "bs": "4KiB", "iodepth": 1, "numjobs": 1, "number_ios": n}


def _loaded(rw: str, bs: str, jobs: int, qd: int, n: int) -> dict[str, Any]:
    return {"rw": rw, "bs": bs, "iodepth": qd, "numjobs": jobs, "number_ios": n}


# Steady-state random writes run on a replica of the drive: every die and plane, the spare
# fraction, fewer blocks per plane and, for large blocks, fewer pages per block. Greedy GC's
# steady WAF follows from the spare fraction less what GC cannot use: the free-block reserve
# and the open blocks, one per plane per stream. Those take the real drive's share of the spare
# only when a plane holds enough blocks: on 48 blocks per plane the PM9A3 (12.7 % spare) ran at
# WAF 6.0, on 256 at 4.27, where the LRW model of its full-size drive gives 4.3. Smaller
# blocks keep the replica's size (and the steady window's cost) while GC cycles through
# its blocks many times per run; a block's erase is then shared by fewer pages (3 ms per
# 144 TLC pages of the P4500 replica, 0.5 % of their program time).
# The ageing is simulated: a replica's drawn state (ftl.aging = "replica") still starts a
# transient that a short run does not outlast (the SZ985's steady writes: 141 k after replica
# ageing, 170 k after simulated).
STEADY_BLOCKS = 256


def _aged(pages: Optional[int]) -> dict[str, Any]:
    s: dict[str, Any] = {"ftl.precondition": "aged", "ftl.aging": "simulate", "media.nand.blocks_per_plane": STEADY_BLOCKS}
    if pages is not None:
        s["media.nand.pages_per_block"] = pages
    return s


SAMSUNG = "Samsung's usual QD32 x 4 threads"

# Writes per job of the P4500s' steady-state runs: GC's pacing settles over a longer window on
# their TLC blocks than on the Samsung drives'; over 4 x 100 k, 200 k and 400 k writes the 2 TB
# drive's steady rate is 42.0 k, 42.2 k and 42.4 k IOPS.
P4500_STEADY = 200_000

# Pages per block of the P4500s' steady-state replica: 144 of the drive's 768 (three pages to a
# TLC word line).
P4500_PAGES = 144

# Pages per block of the PM9A3's steady-state replica: 216 of the drive's 1152.
PM9A3_PAGES = 216

AGED_NOTE = "aged to steady state (simulated) on {b} blocks per plane{p} (same dies, planes and spare fraction)"

def _seq(read: float, write: float, source: str, bs: str, jobs: int, qd: int, n: int, train_write: bool = False) -> list[Figure]:
    """Sequential read and write bandwidth, both from `source`."""
    note = f"{bs}, {jobs} jobs x QD{qd}"
    return [
        Figure("sequential read", "mbs", read, source, _loaded("read", bs, jobs, qd, n), note=note),
        Figure("sequential write", "mbs", write, source, _loaded("write", bs, jobs, qd, n), note=note, train=train_write),
    ]


def _steady(iops: float, source: str, jobs: int, qd: int, n: int, pages: Optional[int] = None, train: bool = False) -> Figure:
    """Random 4 KiB writes on the drive aged to steady state, on a replica of `pages` pages per
    block (the drive's own when None)."""
    note = AGED_NOTE.format(b=STEADY_BLOCKS, p=f" of {pages} pages" if pages else "") + f"; {jobs} jobs x QD{qd}"
    return Figure("steady-state 4 KiB random write IOPS", "iops", iops, source, _loaded("randwrite", "4KiB", jobs, qd, n), _aged(pages), note=note, train=train)



#: The runs of AnandTech's random-read latency tables: a million reads at QD1, and QD16 as
#: 4 jobs x QD4 (a percentile as far out as 99.999 needs that many to be more than a few samples).
QOS_QD1 = _qd1("randread", 1_000_000)
QOS_QD16 = _loaded("randread", "4KiB", 4, 4, 250_000)

#: Percentile names as reviews write them.
ORDINAL = {"p50": "median", "p99": "99th percentile", "p99.9": "99.9th percentile", "p99.99": "99.99th percentile", "p99.999": "99.999th percentile"}


def _qos(
    source: str, workload: dict[str, Any], qd: str, points: list[tuple[str, float, bool]], note: str = "", settings: Optional[dict[str, Any]] = None
) -> list[Figure]:
    """QoS rows of one run: each (percentile metric, published us, in the training set)."""
    rw = "read" if "read" in workload["rw"] else "write"
    return [Figure(f"{qd} 4 KiB random {rw} latency, {ORDINAL[m]}", m, value, source, workload, dict(settings or {}), note=note, train=train) for m, value, train in points]


def _flash_read_table(drive: str, qd1: tuple[float, float, float, float], qd16: tuple[float, float, float, float, float]) -> list[Figure]:
    """A flash drive's row of AnandTech's random-read table: at QD1 the mean (training: the
    read path's unknown), median, 99th and 99.999th percentiles (training: the background
    work's cadence); at QD16 the rate, mean, median, 99th and 99.999th percentiles."""
    src = f"AnandTech measured ({drive}, in the P4800X review), 4 kB random read"
    w1, w16 = QOS_QD1, QOS_QD16
    aged = {"ftl.precondition": "aged", "ftl.aging": "replica"}
    note = "QD16 as 4 jobs x QD4"
    mean1, p50, p99, p99999 = qd1
    iops, mean16, *tail16 = qd16
    return [
        Figure("QD1 4 KiB random read latency", "lat", mean1, src + " at QD1", w1, aged, train=True),
        *_qos(src + " at QD1", w1, "QD1", [("p50", p50, False), ("p99", p99, False), ("p99.999", p99999, True)], settings=aged),
        Figure("4 KiB random read IOPS, QD16", "iops", iops, src + " at QD16", w16, aged, note=note),
        Figure("QD16 4 KiB random read latency", "lat", mean16, src + " at QD16", w16, aged, note=note),
        *_qos(src + " at QD16", w16, "QD16", [(m, x, False) for m, x in zip(("p50", "p99", "p99.999"), tail16)], settings=aged, note=note),
    ]


DEVICES: dict[str, list[Figure]] = {
    "p4800x": [
        Figure("QD1 4 KiB random read latency", "lat", 8.9, "AnandTech measured mean, 4 KiB QD1 (Intel spec: typical < 10 us)", _qd1("randread")),
        Figure("QD1 4 KiB random write latency", "lat", 10.0, "Intel spec: typical latency (R/W) < 10 us", _qd1("randwrite")),
        Figure("4 KiB random read IOPS, QD1", "iops", 98_000, "Tom's Hardware (tomshw.it), 4K random read at 1 outstanding I/O", _qd1("randread")),
        Figure("4 KiB random read IOPS, QD16", "iops", 550_000, "Intel spec, 4 KiB QD16", _loaded("randread", "4KiB", 4, 4, 30_000), note="QD16 as 4 jobs x QD4"),
        Figure(
            "4 KiB random read IOPS, QD16, measured", "iops", 584_800, "AnandTech measured (375 GB, Intel's lab), 4 KiB QD16", _loaded("randread", "4KiB", 4, 4, 30_000),
            note="QD16 as 4 jobs x QD4",
        ),
        Figure(
            "4 KiB random read IOPS, QD32", "iops", 562_619, "Tom's Hardware (tomshw.it), 4K random read at 32 outstanding I/Os", _loaded("randread", "4KiB", 4, 8, 30_000),
            note="QD32 as 4 jobs x QD8",
        ),
        Figure(
            "8 KiB random read IOPS, QD8", "iops", 280_000, "Tom's Hardware performance preview, 8K random read at 8 outstanding I/Os", _loaded("randread", "8KiB", 2, 4, 30_000),
            note="QD8 as 2 jobs x QD4",
        ),
        Figure("4 KiB random write IOPS, QD16", "iops", 500_000, "Intel spec, 4 KiB QD16", _loaded("randwrite", "4KiB", 4, 4, 30_000), note="QD16 as 4 jobs x QD4", train=True),
        Figure(
            "70/30 4 KiB random mixed IOPS, QD16", "iops", 500_000, "Intel spec (AnandTech's table), 4 KiB 70/30 QD16",
            {**_loaded("randrw", "4KiB", 4, 4, 30_000), "rwmixread": 70}, note="QD16 as 4 jobs x QD4; reads and writes together",
        ),
        Figure("sequential read", "mbs", 2400, "Intel spec, 64 KB sequential", _loaded("read", "64KiB", 4, 4, 8000), note="64KiB, 4 jobs x QD4", train=True),
        Figure("sequential write", "mbs", 2000, "Intel spec, 64 KB sequential", _loaded("write", "64KiB", 4, 4, 8000), note="64KiB, 4 jobs x QD4"),
        *_qos(
            "AnandTech measured (375 GB, Intel's lab), 4 kB random read at QD1",
            QOS_QD1,
            "QD1",
            [("p50", 9.0, False), ("p99", 10.0, False), ("p99.999", 37.0, True)],
        ),
        *_qos(
            "AnandTech measured (375 GB, Intel's lab), 4 kB random read at QD16",
            QOS_QD16,
            "QD16",
            [("p50", 25.0, False), ("p99", 41.0, False), ("p99.999", 81.0, True)],
            note="QD16 as 4 jobs x QD4",
        ),
        Figure(
            "sustained random write IOPS",
            "iops",
            500_000,
            "seed 004: Optane keeps its maximum throughput under sustained writes (in-place, no GC)",
            _loaded("randwrite", "4KiB", 4, 4, 120_000),
            note="4x the 4 KiB run's length: an in-place medium has no steady state to reach",
        ),
    ],
    "sz985": [
        Figure("QD1 4 KiB random read latency", "lat", 16.0, "Samsung spec: 12-20 us (midpoint); AnandTech measured 16 us on the 983 ZET", _qd1("randread")),
        Figure("QD1 4 KiB random write latency", "lat", 16.0, "Samsung spec: typical 16 us", _qd1("randwrite"), train=True),
        Figure("4 KiB random read IOPS", "iops", 750_000, "Samsung spec (queue depth not stated)", _loaded("randread", "4KiB", 4, 32, 40_000), note=SAMSUNG),
        *_seq(3200, 3200, "Samsung spec (block size not stated)", "128KiB", 4, 8, 4000),
        _steady(170_000, "Samsung spec (an enterprise random-write figure: steady state)", 4, 32, 80_000, train=True),
    ],
    "p4500": [
        Figure("QD1 4 KiB random read latency", "lat", 85.0, "Intel spec via Lenovo: random read latency 85 us (2 TB)", _qd1("randread")),
        Figure("QD1 4 KiB random write latency", "lat", 20.0, "Intel spec via Lenovo: random write latency 20 us", _qd1("randwrite"), train=True),
        Figure("QD1 4 KiB sequential read latency", "lat", 10.0, "Intel spec via Lenovo: sequential access latency, read 10 us", _qd1("read")),
        Figure("QD1 4 KiB sequential write latency", "lat", 13.0, "Intel spec via Lenovo: sequential access latency, write 13 us", _qd1("write"), train=True),
        Figure(
            "4 KiB random read IOPS", "iops", 490_000, "Intel spec via Lenovo, 2 TB (queue depth not stated)", _loaded("randread", "4KiB", 4, 64, 40_000),
            note="Intel's usual QD256 as 4 jobs x QD64",
        ),
        *_seq(3200, 1050, "Intel spec via Lenovo (read: all capacities; write: 2 TB)", "128KiB", 4, 8, 4000),
        _steady(38_000, "Intel spec via Lenovo, 2 TB (Intel quotes random writes at steady state)", 4, 64, P4500_STEADY, P4500_PAGES),
    ],
    # The 1 and 4 TB models: the 2 TB drive's controller and dies, half or twice the dies. The
    # write path's unknowns are the 2 TB drive's; the controller's clock is fitted on the 4 TB
    # drive's random reads, the one figure of the family its dies do not bound.
    "p4500-1tb": [
        Figure("QD1 4 KiB random read latency", "lat", 85.0, "Intel spec via Lenovo: random read latency, 1 TB", _qd1("randread")),
        Figure("QD1 4 KiB random write latency", "lat", 20.0, "Intel spec via Lenovo: random write latency, 1 TB", _qd1("randwrite")),
        Figure("4 KiB random read IOPS", "iops", 279_500, "Intel spec via Lenovo, 1 TB", _loaded("randread", "4KiB", 4, 64, 40_000), note="Intel's usual QD256 as 4 jobs x QD64"),
        *_seq(3200, 600, "Intel spec via Lenovo, 1 TB", "128KiB", 4, 8, 4000),
        _steady(30_500, "Intel spec via Lenovo, 1 TB (steady state)", 4, 64, P4500_STEADY, P4500_PAGES),
    ],
    "p4500-4tb": [
        Figure("QD1 4 KiB random read latency", "lat", 115.0, "Intel spec via Lenovo: random read latency, 4 TB", _qd1("randread")),
        Figure("QD1 4 KiB random write latency", "lat", 20.0, "Intel spec via Lenovo: random write latency, 4 TB", _qd1("randwrite")),
        Figure(
            "4 KiB random read IOPS", "iops", 645_000, "Intel spec via Lenovo, 4 TB", _loaded("randread", "4KiB", 4, 64, 40_000), note="Intel's usual QD256 as 4 jobs x QD64", train=True
        ),
        *_seq(3200, 1800, "Intel spec via Lenovo, 4 TB", "128KiB", 4, 8, 4000),
        _steady(62_500, "Intel spec via Lenovo, 4 TB (steady state)", 4, 64, P4500_STEADY, P4500_PAGES),
    ],
    # AnandTech's P4800X review measured the P3700 and the Micron 9100 MAX beside it, on the same
    # host and after the same preconditioning ("4kB random writes twice over"): one table of the
    # 4 kB random read latency distribution at QD1 and QD16. The drive's state is drawn at
    # steady state (ftl.aging = "replica") on the whole drive, and its background GC goes on
    # while it reads.
    "p3700": _flash_read_table("P3700 800 GB", (77.9, 76.0, 96.0, 2768.0), (167_200, 93.9, 91.0, 163.0, 2320.0)),
    "micron9100": _flash_read_table("9100 MAX 2.4 TB", (107.7, 104.0, 117.0, 306.0), (135_700, 116.2, 114.0, 205.0, 1560.0)),
    "970pro": [
        Figure("4 KiB random read IOPS, QD32 x 4", "iops", 500_000, "Samsung spec, 1 TB, QD32 thread 4", _loaded("randread", "4KiB", 4, 32, 40_000)),
        Figure("4 KiB random write IOPS, QD32 x 4", "iops", 500_000, "Samsung spec, 1 TB, QD32 thread 4 (fresh drive)", _loaded("randwrite", "4KiB", 4, 32, 40_000)),
        *_seq(3500, 2700, "Samsung spec, 1 TB", "128KiB", 1, 32, 6000, train_write=True),
    ],
    "pm9a3": [
        Figure("4 KiB random read IOPS", "iops", 900_000, "launch spec, U.2 (heise, Blocks & Files; queue depth not stated)", _loaded("randread", "4KiB", 4, 32, 40_000), note=SAMSUNG),
        *_seq(6500, 3500, "launch spec, U.2 (heise, Blocks & Files)", "128KiB", 4, 8, 8000, train_write=True),
        _steady(200_000, "launch spec, U.2 (heise: 200,000; Blocks & Files: 180,000)", 4, 32, 80_000, PM9A3_PAGES),
    ],
}

#: Figures the drive's maker does not publish (or that were not found), by drive.
MISSING: dict[str, list[str]] = {
    "p4800x": [],
    "sz985": ["steady-state condition of the random-write figure is not stated"],
    "p4500": ["QoS percentiles"],
    "p4500-1tb": ["QoS percentiles"],
    "p4500-4tb": ["QoS percentiles"],
    "p3700": ["Intel's spec figures for the 800 GB model (only the family's maxima were found)", "random-write latency percentiles (not in the stored copies of the review)"],
    "micron9100": ["Micron's spec figures (maxima of unstated queue depths)", "random-write latency percentiles (not in the stored copies of the review)"],
    "970pro": ["QD1 latencies (not found for the 970 PRO)", "steady-state random write (a client drive: not published)"],
    "pm9a3": ["QD1 latencies and the 3.84 TB model's own figures (only the series' maxima were found)"],
}


#: The mechanism believed missing or wrong, for figures that miss by more than 25 %.
WHY: dict[tuple[str, str], str] = {
    ("p3700", "QD16 4 KiB random read latency, 99.999th percentile"): (
        "background GC that has less to do as the minutes pass: the review ran QD16 after QD1, and the drive's QD16 tail is below "
        "its QD1 tail (2,320 against 2,768 us), where ssdlab's background GC keeps the cadence fitted to the QD1 tail (one victim "
        "every 0.98 s) throughout, and a QD16 read that meets it also waits behind other reads; the percentile is the tenth-worst "
        "of 10^6 reads, and over seeds 1-5 it runs 2,554-3,277 us (+10 to +41 %), seed 1 the highest"
    ),
    ("micron9100", "QD16 4 KiB random read latency, 99.999th percentile"): (
        "background work whose load grows with the reads (read-disturb refresh: the firmware rewrites a block after so many reads "
        "of it; or patrol reads): the drive's 99.999th percentile grows fivefold from QD1 to QD16, where background GC on a fixed "
        "cadence, fitted to the QD1 tail (one victim every 19.8 s), gives a read the same odds at any depth, and the 6.5 s QD16 run "
        "meets almost none of it"
    ),
}


@dataclass
class Row:
    device: str
    figure: Figure
    measured: float

    @property
    def error(self) -> float:
        """(ssdlab - published) / published."""
        return (self.measured - self.figure.published) / self.figure.published


#: The host I/O engine of every source's runs: fio's libaio, the engine of the vendors' and the
#: reviewers' Linux fio runs (assumed where a source does not say).
ENGINE = {"host.engine": "libaio"}

#: Each drive's calibrated unknowns, in the order they are fitted, each on its training figure.
CALIBRATED: dict[str, list[Unknown]] = {
    "p4800x": [
        Unknown("ctrl.datapath_bytes", "sequential read", 0.5, 8.0, what="the controller's data path (bytes per cycle of its 1 GHz firmware clock): the per-chunk ceiling"),
        Unknown("ctrl.write_datapath_bytes", "4 KiB random write IOPS, QD16", 0.5, 8.0, what="the data path's bytes per cycle for write data"),
        Unknown("media.ecc.soft_decode", "QD1 4 KiB random read latency, 99.999th percentile", 2, 100, unit="us", what="soft-decision decoding of a chunk: the slow path's time"),
        Unknown(
            "media.ecc.soft_decoders", "QD16 4 KiB random read latency, 99.999th percentile", 1, 16, integer=True,
            what="the controller's soft-decision decoders, for which slow-path reads queue",
        ),
    ],
    "sz985": [
        Unknown("ctrl.firmware.extent_cycles", "QD1 4 KiB random write latency", 10, 40000, integer=True, what="the firmware's work per journal record a write opens"),
        Unknown("ctrl.firmware.gc_move_cycles", "steady-state 4 KiB random write IOPS", 10, 100000, integer=True, what="the firmware's work per unit GC moves"),
    ],
    # First: the 2 TB drive's write-path fits below run on the clock fitted here.
    "p4500-4tb": [
        Unknown("ctrl.firmware.clock", "4 KiB random read IOPS", 200, 2000, unit="MHz", what="the clock of the controller's two firmware cores: its per-command ceiling"),
    ],
    "p4500": [
        Unknown("ctrl.firmware.write_cycles", "QD1 4 KiB sequential write latency", 10, 40000, integer=True, what="the firmware's work per written unit (buffer slot, map update)"),
        Unknown("ctrl.firmware.extent_cycles", "QD1 4 KiB random write latency", 10, 40000, integer=True, what="the firmware's work per journal record a write opens"),
    ],
    "p3700": [
        Unknown(
            "ftl.bg_gc_idle", "QD1 4 KiB random read latency, 99.999th percentile", 10, 10000, unit="ms",
            what="the cadence of background GC while the host reads: one victim this long after the last",
        ),
        Unknown("media.nand.ecc_decode", "QD1 4 KiB random read latency", 0.5, 30, unit="us", what="the LDPC decode of a page read in the controller"),
    ],
    "micron9100": [
        Unknown(
            "ftl.bg_gc_idle", "QD1 4 KiB random read latency, 99.999th percentile", 100, 100000, unit="ms",
            what="the cadence of background GC while the host reads: one victim this long after the last",
        ),
        Unknown("media.nand.ecc_decode", "QD1 4 KiB random read latency", 0.5, 60, unit="us", what="the decode of a page read in the controller"),
    ],
    "970pro": [
        Unknown("media.nand.one_shot_program", "sequential write", 300, 5000, unit="us", what="one-shot program time of an MLC word line"),
    ],
    "pm9a3": [
        Unknown("ctrl.firmware.write_cycles", "sequential write", 10, 40000, integer=True, what="the firmware's work per written unit (buffer slot, map update)"),
    ],
}


#: Unknowns a drive takes from another drive's calibration (the same maker's firmware of the same
#: year), by drive: (key, the drive whose fit it is). Its preset marks them ``[CAL-<DRIVE>]``.
CARRIED: dict[str, list[tuple[str, str]]] = {
    "970pro": [("ctrl.firmware.extent_cycles", "sz985")],
    "p4500": [("ctrl.firmware.clock", "p4500-4tb")],
    "p4500-1tb": [("ctrl.firmware.clock", "p4500-4tb")],
}


#: Unknowns fitted to a figure of the drive that a seed measured rather than a datasheet or review
#: (key, the figure, its value, the command that measures it). They count as training; the
#: preset marks them ``[CAL-S<seed>]``.
SEED_TRAINED: dict[str, list[tuple[str, str, float, str]]] = {
    "p4800x": [
        (
            "media.nvm.read_recovery",
            "seed 004, rule 3: 8 readers on one 4 KiB chunk at 4.6x the latency of 8 spread readers",
            4.6,
            "ssdlab probe p4800x -e crowded",
        )
    ],
}


def lrw_waf(op_ratio: float) -> float:
    """WAF of uniform random writes under LRW (FIFO) cleaning with `op_ratio` of the raw space
    spare (Desnoyers, SYSTOR 2012): a victim's valid fraction x solves x = exp(-a (1 - x)),
    a = raw / user, and WAF = 1 / (1 - x). Greedy GC over many blocks sits just below it."""
    a = 1.0 / (1.0 - op_ratio)
    lo, hi = 0.0, 1.0 - 1e-12  # x - exp(-a (1 - x)) is negative at 0, positive just below 1
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid - math.exp(-a * (1.0 - mid)) < 0:
            lo = mid
        else:
            hi = mid
    return 1.0 / (1.0 - lo)


def drive_writes_per_cycle(op_ratio: float) -> float:
    """Drive writes of uniform random 4 KiB writes per program/erase cycle of the raw space."""
    return 1.0 / ((1.0 - op_ratio) * lrw_waf(op_ratio))


def spare_from_endurance(user_bytes: float, endurance_bytes: float, pe_cycles: float) -> float:
    """The spare fraction that `pe_cycles` of the raw space take to give the rated endurance."""
    target = endurance_bytes / user_bytes / pe_cycles
    lo, hi = 1e-6, 0.99  # drive writes per cycle rise with the spare
    for _ in range(200):
        mid = (lo + hi) / 2
        if drive_writes_per_cycle(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


#: The P4500 family's cited facts behind its spares [I1]: user bytes (IDEMA sizes) and rated
#: endurance (5 years), by preset; one NAND (384 Gbit = 48 GiB dies) for all three.
P4500_ENDURANCE: dict[str, tuple[int, float]] = {
    "p4500-1tb": (1_000_204_886_016, 1.38e15),
    "p4500": (2_000_398_934_016, 1.89e15),
    "p4500-4tb": (4_000_787_030_016, 4.84e15),
}
P4500_DIE_BYTES = 48 << 30


def p4500_spares() -> tuple[float, dict[str, float]]:
    """The P4500s' P/E budget and each capacity's spare fraction (``ftl.op_ratio``).

    Each capacity holds the fewest dies that fit it (24, 48, 96); the one with the most endurance
    per byte (the 1 TB) keeps all of its dies' spare and sets the P/E budget of the NAND they
    share; the others' spares follow from their endurance. Where that spare is below what
    their dies would leave, the rest is reserved (bad blocks, parity, metadata: not published).
    """
    user, endurance = P4500_ENDURANCE["p4500-1tb"]
    op = 1.0 - user / (24 * P4500_DIE_BYTES)
    pe = endurance / user / drive_writes_per_cycle(op)
    return pe, {d: spare_from_endurance(u, e, pe) for d, (u, e) in P4500_ENDURANCE.items()}


#: Preset values computed from cited facts (``[DERIVED]`` in the preset), by drive: (key, rule).
DERIVED: dict[str, list[tuple[str, str]]] = {
    **{
        d: [
            (
                "ftl.op_ratio",
                "all of its 24 dies' spare; its endurance (1.38 PB) sets the P4500s' P/E budget under the LRW model of GC (`p4500_spares`)"
                if d == "p4500-1tb"
                else f"the spare its endurance ({e / 1e15:.2f} PB) implies under the LRW model of GC, with the P/E budget the 1 TB drive's endurance sets (`p4500_spares`)",
            ),
            ("ctrl.firmware.gc_move_cycles", "equal to `ctrl.firmware.write_cycles`: a unit GC moves takes a buffer slot and a map update, as a written unit does"),
        ]
        for d, (_, e) in P4500_ENDURANCE.items()
    },
    "pm9a3": [("ctrl.firmware.gc_move_cycles", "equal to `ctrl.firmware.write_cycles`: a unit GC moves takes a buffer slot and a map update, as a written unit does")],
}


#: Latency percentiles a QoS figure may name, by metric.
PERCENTILES = {"p50": 50.0, "p99": 99.0, "p99.9": 99.9, "p99.99": 99.99, "p99.999": 99.999}

#: How far a QoS (percentile) prediction may be off: a tail is one rare event's cost, and a
#: published tail is one run's.
TAIL_TOLERANCE = 0.35


def is_tail(f: Figure) -> bool:
    """Whether `f` is a QoS row (a latency percentile)."""
    return f.metric in PERCENTILES


def _settings(f: Figure, settings: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The run's settings: the source's engine, the figure's own (or `settings`), and the
    percentile a QoS row reads."""
    s = {**ENGINE, **(f.settings if settings is None else settings)}
    if is_tail(f):
        s["stats.percentiles"] = [PERCENTILES[f.metric]]
    return s


def measure(drive: str, f: Figure, settings: Optional[dict[str, Any]] = None) -> float:
    """Runs figure `f` on `drive` (with `settings` over its own) and returns what it measures."""
    r = api.run(drive, workload=f.workload, set=_settings(f, settings))
    return _measure(r, f.metric, f.workload["rw"])


def _measure(result: api.Result, metric: str, rw: str) -> float:
    if metric == "iops" and rw in ("randrw", "rw"):
        return float(result.summary["iops"])  # a mixed figure counts reads and writes together
    s = result.summary["write" if "write" in rw else "read"]
    if metric in PERCENTILES:
        pct = s["latency_us"]["percentiles"]
        key = next(k for k in pct if float(k) == PERCENTILES[metric])
        return float(pct[key])
    if metric == "lat":
        return float(s["latency_us"]["mean"])
    if metric == "iops":
        return float(s["iops"])
    return float(s["bandwidth_mib_s"]) * (1 << 20) / MB


def figures(devices: Optional[list[str]] = None) -> list[tuple[str, Figure]]:
    names = devices or list(DEVICES)
    for d in names:
        if d not in DEVICES:
            from .exceptions import ConfigError

            raise ConfigError(f"validate: no published figures for {d!r}; the device library is {', '.join(DEVICES)}")
    return [(d, f) for d in names for f in DEVICES[d]]


def _run_key(d: str, f: Figure) -> str:
    """Figures of one drive with the same workload and settings share one run."""
    return json.dumps([d, f.workload, f.settings], sort_keys=True)


def validate(devices: Optional[list[str]] = None, progress: Optional[Callable[[float], None]] = None) -> list[Row]:
    """Runs every figure of ``devices`` (default: the whole library) and returns the rows.
    Figures of one drive with the same workload and settings (a run's mean, rate and
    percentiles) share one run, which reports every percentile they read."""
    todo = figures(devices)
    runs: dict[str, list[tuple[str, Figure]]] = {}
    for d, f in todo:
        runs.setdefault(_run_key(d, f), []).append((d, f))
    done: dict[str, api.Result] = {}
    for i, (key, group) in enumerate(runs.items()):

        def step(x: float, i: int = i) -> None:
            if progress is not None:
                progress((i + x) / len(runs))

        d, f = group[0]
        settings = _settings(f)
        pct = sorted({PERCENTILES[g.metric] for _, g in group if is_tail(g)})
        if pct:
            settings["stats.percentiles"] = pct
        done[key] = api.run(d, workload=f.workload, set=settings, progress=step)
    return [Row(d, f, _measure(done[_run_key(d, f)], f.metric, f.workload["rw"])) for d, f in todo]


UNITS = {"lat": "us", "iops": "IOPS", "mbs": "MB/s", **{p: "us" for p in PERCENTILES}}


def tolerance(f: Figure) -> float:
    """The error beyond which a figure counts as a miss."""
    return TAIL_TOLERANCE if is_tail(f) else 0.25


def role(f: Figure) -> str:
    return "train" if f.train else "predicted"


def summary(rows: list[Row]) -> dict[str, Any]:
    """Predictions only: how many, the shares of mean and throughput predictions within 15 % and
    25 % of what was published, and the share of QoS (percentile) predictions within 35 %."""
    pred = [r for r in rows if not r.figure.train and not is_tail(r.figure)]
    tails = [r for r in rows if not r.figure.train and is_tail(r.figure)]
    n = len(pred)
    within = lambda x: sum(abs(r.error) <= x for r in pred)  # noqa: E731
    return {
        "figures": len(rows),
        "drives": len({r.device for r in rows}),
        "train": sum(r.figure.train for r in rows),
        "predicted": n,
        "within_15": within(0.15) / n if n else float("nan"),
        "within_25": within(0.25) / n if n else float("nan"),
        "tails": len(tails),
        "tail_drives": len({r.device for r in tails}),
        "tails_within": sum(abs(r.error) <= TAIL_TOLERANCE for r in tails) / len(tails) if tails else float("nan"),
    }


def summary_line(rows: list[Row]) -> str:
    s = summary(rows)
    line = (
        f"{s['figures']} figures over {s['drives']} drives: {s['train']} train, {s['predicted']} predicted means and rates, "
        f"{100 * s['within_15']:.0f} % of them within ±15 %, {100 * s['within_25']:.0f} % within ±25 %"
    )
    if s["tails"]:
        line += f"; {s['tails']} predicted QoS percentiles over {s['tail_drives']} drives, {100 * s['tails_within']:.0f} % within ±{100 * TAIL_TOLERANCE:.0f} %"
    return line + "."


def num(x: float, metric: str) -> str:
    if metric == "lat" or metric in PERCENTILES:
        return f"{x:.1f}"
    return f"{x:,.0f}"


def markdown(rows: list[Row], command: str = "ssdlab validate") -> str:
    """The validation tables as Markdown, one section per drive."""
    out = [
        "# Validation of the device library",
        "",
        "Each drive is a preset of cited architecture facts and of a few calibrated unknowns",
        "(`presets/<drive>.toml`, sources in `docs/devices/`). Each unknown is fitted to one figure of",
        "the drive's declared training set (*train*; `ssdlab validate --fit DRIVE` re-runs the fit);",
        "every other figure is *predicted*, and only those validate. Runs use fio's libaio engine.",
        f"Regenerate with `{command}` (`python3 dev.py run` sets up the `ssdlab` command). Error is",
        "(ssdlab − published) / published; |error| > 25 % is marked **miss** (> 35 % for a QoS",
        "percentile).",
        "",
        "**" + summary_line(rows) + "**",
        "",
    ]
    for d in dict.fromkeys(r.device for r in rows):
        out += [f"## {d}", "", "| figure | role | published | ssdlab | error | source | run |", "|---|---|---:|---:|---:|---|---|"]
        for r in (r for r in rows if r.device == d):
            f = r.figure
            unit = UNITS[f.metric]
            err = 100 * r.error
            mark = " **miss**" if abs(r.error) > tolerance(f) else ""
            run = ", ".join(f"{k}={v}" for k, v in f.workload.items()) + (f"; {f.note}" if f.note else "")
            out.append(f"| {f.name} | {role(f)} | {num(f.published, f.metric)} {unit} | {num(r.measured, f.metric)} {unit} | {err:+.0f} %{mark} | {f.source} | {run} |")
        cal = CALIBRATED.get(d, [])
        if cal:
            out += ["", "Calibrated unknowns (in the preset, `[CAL]`): " + "; ".join(f"`{u.key}` ({u.what}) on *{u.figure}*" for u in cal) + "."]
        if SEED_TRAINED.get(d):
            out += ["", "Calibrated on a seed's figure of the drive (`[CAL-S<seed>]`, training): " + "; ".join(f"`{k}` on *{fig}* (`{cmd}`)" for k, fig, _, cmd in SEED_TRAINED[d]) + "."]
        if DERIVED.get(d):
            out += ["", "Derived from cited facts (`[DERIVED]`): " + "; ".join(f"`{k}`, {rule}" for k, rule in DERIVED[d]) + "."]
        if CARRIED.get(d):
            out += ["", "Carried over from another drive's fit (`[CAL-<DRIVE>]`): " + "; ".join(f"`{k}` from *{src}*" for k, src in CARRIED[d]) + "."]
        misses = [r for r in rows if r.device == d and abs(r.error) > tolerance(r.figure)]
        if misses:
            out += ["", "Misses, and the mechanism believed missing or wrong:", ""]
            out += [f"- {r.figure.name}: {WHY.get((d, r.figure.name), 'not yet analysed')}." for r in misses]
        if MISSING.get(d):
            out += ["", "Not validated: " + "; ".join(MISSING[d]) + "."]
        out.append("")
    return "\n".join(out)


def as_records(rows: list[Row]) -> list[dict[str, Any]]:
    return [
        {
            "device": r.device,
            "figure": r.figure.name,
            "unit": UNITS[r.figure.metric],
            "published": r.figure.published,
            "ssdlab": r.measured,
            "error": r.error if math.isfinite(r.error) else None,
            "role": role(r.figure),
            "source": r.figure.source,
        }
        for r in rows
    ]


def write_markdown(path: str, rows: list[Row], devices: Optional[list[str]]) -> None:
    """The tables as Markdown (``ssdlab validate -o``), headed by the command that made them."""
    cmd = "ssdlab validate" + ("" if not devices else " " + " ".join(devices)) + f" -o {path}"
    with open(path, "w", encoding="utf-8") as f:
        f.write(markdown(rows, cmd))


def print_table(out: Console, rows: list[Row]) -> None:
    """The table ``ssdlab validate`` prints: each figure, published and ours, errors over 25 % in red."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title="Published figures against ssdlab", title_justify="left")
    for c in ("drive", "figure", "role", "published", "ssdlab", "error"):
        t.add_column(c, justify="left" if c in ("drive", "figure", "role") else "right")
    for r in rows:
        unit = UNITS[r.figure.metric]
        err_pct = 100 * r.error
        style = "red" if abs(r.error) > tolerance(r.figure) else ""
        t.add_row(
            r.device, escape(r.figure.name), role(r.figure), f"{num(r.figure.published, r.figure.metric)} {unit}", f"{num(r.measured, r.figure.metric)} {unit}",
            f"[{style}]{err_pct:+.0f} %[/{style}]" if style else f"{err_pct:+.0f} %",
        )
    out.print(t)
    out.print(summary_line(rows))
