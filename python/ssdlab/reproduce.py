"""`ssdlab reproduce STUDY`: a seed study's experiments through the sweep engine, each
published figure beside ours.

Every published value is quoted from the seed text in ``../shared/seeds`` with its file and line.
A figure whose number cannot be read from the text (a plot, or a table the extraction scrambled)
is marked so and judged on its direction only. No value is invented.

The verdict of a figure with a number:

- **matches**: ours lies on the published side of the figure's baseline and within ±25 %;
- **direction**: on the right side, but off by more than 25 %;
- **miss**: on the wrong side.

A figure with a direction only is **holds** or **miss**.

Leaves out (for now): the studies of seeds 000 to 003, which `ssdlab isolation`, `ssdlab
decompose` and `ssdlab atc` run on their own.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from ssdlab.exceptions import InputError

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Figure:
    """A published figure and how to compute ours from the study's stores."""

    name: str
    published: Optional[float]  # None: not readable in the text (direction only)
    unit: str
    quote: str
    where: str  # seed file:line
    ours: Callable[[dict[str, "pd.DataFrame"]], float]
    baseline: float = 1.0  # the side of it that the claim is on
    above: bool = True  # the claim: ours > baseline (else <)
    unreadable: bool = False  # the text has a number here that cannot be read from it


def verdict(f: Figure, ours: float) -> tuple[Optional[float], str]:
    """(error in per cent, verdict) of ``ours`` against the figure."""
    if ours is None or not math.isfinite(ours):
        return None, "not measured"
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
    specs: dict[str, dict[str, Any]]  # store name -> sweep spec
    figures: tuple[Figure, ...]


SEED004 = "004_40c1719b1bcc41ff.txt"


def _rule(df: "pd.DataFrame", base: str, rule: str) -> float:
    row = df[df["base"] == base]
    return float(row[f"rule.{rule}.value"].iloc[0]) if len(row) else math.nan


def _holds(df: "pd.DataFrame", base: str, rule: str) -> float:
    """1 when the rule holds on ``base``, 0 when it does not, NaN when inconclusive."""
    row = df[df["base"] == base]
    v = str(row[f"rule.{rule}.verdict"].iloc[0]) if len(row) else "inconclusive"
    return {"holds": 1.0, "does not hold": 0.0}.get(v, math.nan)


def _t_4k_qd1(runs: "pd.DataFrame") -> float:
    lat = {r["base"]: r["read.latency_us.mean"] for _, r in runs.iterrows()}
    lo, hi = lat["p4800x"], lat["970pro"]
    return (hi - lo) / lo if hi >= lo else -(lo - hi) / hi


def _optane_contract(profile: str) -> Study:
    probe = {"profile": profile} if profile == "full" else {}
    specs = {
        "probes": {"name": "optane-contract-probes", "kind": "probe", "probe": probe, "axes": {"base": ["p4800x", "970pro"]}},
        "qd1": {"name": "optane-contract-qd1", "set": {"workload.rw": "randread", "workload.bs": "4KiB", "workload.iodepth": 1, "workload.numjobs": 1, "workload.number_ios": 4000}, "axes": {"base": ["p4800x", "970pro"]}},
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
        figures.append(Figure(f"Optane: {title} (rule holds)", None, "", quotes[rule], f"{SEED004}:{line}", lambda s, r=rule: _holds(s["probes"], "p4800x", r), 0.5, True))
    figures += [
        Figure("Optane: crowded readers' latency over spread", 4.6, "x", "Rule 3: Avoid Crowded Accesses (4.6x)", f"{SEED004}:312", lambda s: _rule(s["probes"], "p4800x", "crowded")),
        Figure("Optane: 4 KiB bandwidth over sub-4 KiB requests'", 5.0, "x", "Rule 5: Avoid Tiny Accesses (5x)", f"{SEED004}:314", lambda s: _rule(s["probes"], "p4800x", "tiny")),
        Figure("Optane: misaligned latency over aligned", 1.2, "x", "Rule 6: Issue 4KB Aligned Requests (1.2x)", f"{SEED004}:316", lambda s: _rule(s["probes"], "p4800x", "alignment")),
        Figure("Optane: interleaving degree", 7.0, "chunks", "Internal parallelism: Optane SSD (7) << Flash SSD (128)", f"{SEED004}:248", lambda s: float(s["probes"].set_index("base").loc["p4800x", "interleave.degree"]), 1.0),
        Figure("Flash: interleaving degree", 128.0, "chunks", "Internal parallelism: Optane SSD (7) << Flash SSD (128)", f"{SEED004}:248", lambda s: float(s["probes"].set_index("base").loc["970pro", "interleave.degree"]), 7.0),
        Figure("Flash: garbage collection matters (forget GC does not hold)", None, "", "Optane: LBA-based mapping vs. Flash : written-order based", f"{SEED004}:326", lambda s: 1.0 - _holds(s["probes"], "970pro", "forget_gc"), 0.5),
        Figure("Optane faster than flash at 4 KiB QD1: T = (L_flash - L_optane) / L_optane", None, "", "T > 0 when Optane has smaller latency (the heatmap's cells are scrambled in the text)", f"{SEED004}:154", lambda s: _t_4k_qd1(s["qd1"]), 0.0, unreadable=True),
    ]
    return Study("optane-contract", "004", "Towards an Unwritten Contract of Intel Optane SSD (HotStorage'19)", specs, tuple(figures))


STUDIES: dict[str, Callable[[str], Study]] = {"optane-contract": _optane_contract}


def reproduce(study: str, output: str, profile: str = "quick", executor: str = "local", workers: Optional[int] = None, progress: Optional[Callable[[float], None]] = None) -> "pd.DataFrame":
    """Runs ``study`` (or ``all``) into ``output`` (stores, figures and ``<study>.html``) and
    returns one row per published figure."""
    import pandas as pd

    from ssdlab import lab, report

    names = list(STUDIES) if study == "all" else [study]
    for n in names:
        if n not in STUDIES:
            raise InputError(f"study {n!r}: one of {', '.join([*STUDIES, 'all'])}")
    os.makedirs(output, exist_ok=True)
    rows = []
    steps = sum(len(STUDIES[n](profile).specs) for n in names)
    done = 0
    for n in names:
        st = STUDIES[n](profile)
        frames: dict[str, pd.DataFrame] = {}
        for key, spec in st.specs.items():
            step = (lambda f, d=done: progress((d + f) / steps)) if progress else None
            path = os.path.join(output, f"{st.key}-{key}.store")
            frames[key] = lab.sweep(spec, store=path, executor=executor, workers=workers, progress=step)
            report.report(path, os.path.join(output, f"{st.key}-{key}.html"))
            done += 1
        for f in st.figures:
            try:
                ours = f.ours(frames)
            except (KeyError, IndexError, ValueError, ZeroDivisionError):
                ours = math.nan
            err, v = verdict(f, ours)
            rows.append({
                "study": st.key, "seed": st.seed, "figure": f.name,
                "published": ("not readable in the text" if f.unreadable else "direction only") if f.published is None else f"{f.published:g}{(' ' + f.unit) if f.unit else ''}",
                "where": f.where, "quote": f.quote, "ours": ours, "error_pct": err, "verdict": v,
            })
    table = pd.DataFrame(rows)
    table.to_csv(os.path.join(output, "figures.csv"), index=False)
    return table


__all__ = ["Figure", "STUDIES", "reproduce", "verdict"]
