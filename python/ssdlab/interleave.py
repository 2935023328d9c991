"""The parallel units behind a drive's address space, from two experiments of reads.

1. **Strided reads** (seed 004's method): one 4 KiB read every S chunks, for a range of strides
   S. A stride that is a multiple of the stripe period sends every read to one parallel unit, so
   the bandwidth dips there; the spacing of the lowest dips is the **period**, in 4 KiB chunks
   (what the seed calls the interleaving degree: 7 for its Optane drive, 128 for its flash one).
2. **Pinned pairs**: two streams, each reading every P-th chunk (P the period, so each stays on
   one unit), the second started δ chunks after the first, for δ = 0 and every divisor of P. When
   both streams are on one unit they share its throughput; on two units they get about twice it.
   The smallest δ that doubles it is the **stripe unit** (the chunks a unit holds in a row: a
   flash page, an NVM chunk); the next multiple of it that falls back on the first unit closes a
   round over the **parallel units** (dies, memory controllers): their count is that δ over the
   stripe unit, and the period holds ``layers`` such rounds (flash planes striped last, which
   take turns on one die).

Each unit is assumed to hold stripe units in rotation, ``unit(x) = floor(x / chunk) mod units``
for chunk x within a period: the rule of channel-, die- or plane-first flash striping and of
chunk interleaving over memory controllers.

Leaves out: units that are not a rotation (hashed placement; a stream at stride P then visits
several), and parallelism inside a unit that two pinned streams already saturate (banks behind
one memory controller, planes of one die read together) count as one unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PAIR_JOBS = 2  # jobs per pinned stream: one job's host path (one CPU) can bound a fast unit
PAIR_QD = 16  # each job's queue depth: enough that the unit, not Little's law, bounds a stream


def detect_period(strides: Sequence[int], bw: Sequence[float]) -> dict[str, Any]:
    """The stripe period from a strided-read sweep: the spacing of its lowest dips.

    The dips are the strides a fifth or more below the median (or within a quarter of the way
    from the minimum to it); the first level is the candidate spacing d whose multiples best
    match them (each of d's multiples in the sweep a dip, no other stride a dip), needing two
    multiples. The period is the deepest level under it: the smallest multiple of d whose own
    multiples all lie within 30 % of the lowest bandwidth, else d refined while the multiples of
    some k x d are clearly below d's others. Confidence is that match
    times the dips' depth (a dip of a third counts fully: several times the few per cent that
    repeated fio runs of one point vary by).
    """
    pts = sorted(zip((int(s) for s in strides), (float(b) for b in bw)))
    if len(pts) < 4:
        return {"period": None, "confidence": 0.0, "verdict": "inconclusive", "reason": "fewer than four strides measured", "dips": []}
    ss = [s for s, _ in pts]
    vals = [b for _, b in pts]
    med = sorted(vals)[len(vals) // 2]
    low = min(vals)
    depth = 1.0 - low / med if med > 0 else 0.0
    if depth < 0.1:
        reason = (f"no dips: the lowest stride is {depth * 100:.0f} % below the median (the period is above {max(ss) // 2} chunks,"
                  " reads are not striped, or a path all units share bounds every stride)")
        return {"period": None, "confidence": 0.0, "verdict": "inconclusive", "reason": reason, "dips": []}
    # A dip: a fifth below the median, or in the lowest quarter of the way down to the minimum.
    cut = max(low + 0.25 * (med - low), 0.8 * med)
    dips = {s for s, b in pts if b <= cut}
    best: tuple[float, int] = (-1.0, 0)
    for d in range(2, max(ss) // 2 + 1):
        mult = {s for s in ss if s % d == 0}
        if len(mult) < 2:
            continue
        hits = len(mult & dips)
        false = len(dips - mult)
        score = (hits / len(mult)) * (1.0 - false / max(len(dips), 1))
        if score > best[0] + 1e-12:
            best = (score, d)
    score, d = best
    if d == 0 or score <= 0:
        return {"period": None, "confidence": 0.0, "verdict": "inconclusive", "reason": "the dips follow no spacing of two or more strides", "dips": sorted(dips)}
    # Strides sharing a factor with the period spread over fewer units and dip part way: if the
    # multiples of some k x d are clearly lower than d's other multiples, the period is k x d.
    bw_at = dict(pts)
    k = 2
    while k * d <= max(ss):
        big = [bw_at[s] for s in ss if s % (k * d) == 0]
        rest = [bw_at[s] for s in ss if s % d == 0 and s % (k * d) != 0]
        if len(big) >= 2 and rest and max(big) < 0.7 * min(rest):
            d, k = k * d, 2
            continue
        k += 1
    # The deepest level: the smallest multiple of d all of whose multiples (two at least) are
    # within 30 % of the lowest bandwidth (one unit's, every layer of it taken in turn).
    for m in range(d, max(ss) // 2 + 1, d):
        deep = [bw_at[s] for s in ss if s % m == 0]
        if len(deep) >= 2 and max(deep) <= 1.3 * low:
            d = m
            break
    mult = {s for s in ss if s % d == 0}
    dips = {s for s in mult if bw_at[s] <= cut} or dips
    confidence = score * min(1.0, depth * 3.0)
    verdict = "detected" if confidence >= 0.6 else "inconclusive"
    dip_bw = [b for s, b in pts if s in dips]
    return {
        "period": d, "confidence": round(confidence, 3), "verdict": verdict, "dips": sorted(dips),
        "dip_bw_mib_s": sum(dip_bw) / len(dip_bw), "median_bw_mib_s": med,
        "reason": f"dips at strides {', '.join(str(s) for s in sorted(dips)[:8])}{'...' if len(dips) > 8 else ''}"
        f" ({depth * 100:.0f} % below the median): every {d} x 4 KiB chunks, {d * 4} KiB",
    }


def pair_offsets(period: int) -> list[int]:
    """The offsets (chunks) the pinned pairs are measured at: 0 and every divisor of the period
    below it (the stripe unit and a round over the units both divide the period)."""
    return [0] + [d for d in range(1, period) if period % d == 0]


def detect_units(period: int, offsets: Sequence[int], bw: Sequence[float], strided: Mapping[int, float], unit_bytes: int = 4096) -> dict[str, Any]:
    """Parallel units, their stripe unit and layers from the pinned pairs' bandwidths (``bw``, at
    ``offsets`` chunks), and which of them serve a stream, from the strided reads' (``strided``:
    stride -> bandwidth).

    1. The ratio of each pair's bandwidth to two streams on one unit (offset 0) is about 1 on
       the same unit and about 2 on another; the cut is half way from 1 to the largest ratio,
       which must reach 1.3. The stripe unit C is the smallest offset above the cut; a round
       over the units the smallest multiple of C below it (else the period); their count D is
       that round over C, and the period holds ``layers`` rounds (flash planes striped last).
    2. The servers. A stream at a stride s (a multiple of C dividing the period) visits n(s) of
       the units by the rotation. If one that visits at most 8 (each with 4 of the sweep's reads
       in flight) gets under 45 % of n times one unit's bandwidth (the strided reads at the
       period), and under 90 % of the best stride's (the drive's own ceiling), a path those
       units share bounds it: a memory controller's bus over its banks and partitions. The path
       holds as many units as the widest stride that gets no more (within 10 %), and the
       servers are the paths. Else the units serve (flash dies).

    Confidence is the gap between the ratios below and above the cut as a share of the largest,
    times the share of offsets the rotation explains.
    """
    at = {int(o): float(b) for o, b in zip(offsets, bw)}
    base = at.get(0, 0.0)
    none: dict[str, Any] = {"degree": None, "chunk_bytes": None, "layers": None, "confidence": 0.0, "verdict": "inconclusive", "ratios": {}}
    if base <= 0 or len(at) < 2:
        return {**none, "reason": "no pinned pair on one unit measured"}
    ratios = {o: b / base for o, b in sorted(at.items()) if o > 0}
    none["ratios"] = {o: round(r, 3) for o, r in ratios.items()}
    top = max(ratios.values())
    if top < 1.3:
        return {**none, "reason": f"two streams never ran faster apart than on one unit (best {top:.2f}x): one unit, or units that do not rotate by address"}
    cut = (1.0 + top) / 2.0
    chunk = min(o for o, r in ratios.items() if r >= cut)
    rounds = [o for o, r in ratios.items() if o > chunk and o % chunk == 0 and r < cut]
    lap = min(rounds) if rounds else period
    units = lap // chunk
    fits = sum((o % lap < chunk) == (r < cut) for o, r in ratios.items()) / len(ratios)
    same = [r for o, r in ratios.items() if o % lap < chunk]
    other = [r for o, r in ratios.items() if o % lap >= chunk]
    gap = (min(other) - max(same, default=1.0)) / (top - 1.0) if other else 0.0
    confidence = round(max(0.0, min(1.0, gap)) * fits, 3)
    servers, shared = units, ""
    one, best = strided.get(period), max(strided.values(), default=0.0)
    visits = {st: len({((k * st) % period) // chunk % units for k in range(period // st)}) for st in strided if st < period and period % st == 0 and st % chunk == 0}
    # Bound: at most 8 units visited (each with 4 of the sweep's 32 reads in flight, enough to
    # keep it busy), under half their bandwidth alone and clearly under the drive's ceiling.
    bound = [(n, st) for st, n in visits.items() if one and 1 < n <= 8 and 0 < strided[st] < 0.45 * n * one and strided[st] < 0.9 * best]
    if bound:
        n, st = max(bound)
        cap = strided[st]
        # The path's plateau: strides that visit more of its units get no more bandwidth.
        group = max(m for s2, m in visits.items() if m >= n and abs(strided[s2] / cap - 1.0) <= 0.1)
        if units % group == 0:
            servers = units // group
            shared = (f"; a stream every {st} chunks visits {n} of them and gets {cap:.0f} MiB/s, under half their {n} x {one:.0f},"
                      f" and one that visits {group} gets no more: {servers} shared paths serve them")
    kib = chunk * unit_bytes // 1024
    layers = period // lap
    return {
        "degree": servers, "chunk_bytes": chunk * unit_bytes, "layers": layers, "units": units,
        "period": servers * chunk, "confidence": confidence, "verdict": "detected" if confidence >= 0.5 else "inconclusive", "ratios": none["ratios"],
        "reason": f"two pinned streams {chunk} chunk{'s' if chunk > 1 else ''} apart ran {ratios[chunk]:.2f}x two on one unit,"
        f" {lap} apart {'share one again' if rounds else 'is the whole period'}: {units} units of {kib} KiB"
        + (f" x {layers} layers" if layers > 1 else "") + shared,
    }


def combine(period: Mapping[str, Any], units: Mapping[str, Any] | None) -> dict[str, Any]:
    """The probe's interleaving result: the period's fields, the units' under ``units``, and
    ``degree`` the parallel units (None until the pinned pairs find them)."""
    out = dict(period)
    out["units"] = dict(units) if units is not None else None
    found = units if units is not None and units.get("verdict") == "detected" else {}
    out["degree"] = found.get("degree")
    # The seed's interleaving degree: the chunks of one round over the parallel units.
    out["stripe"] = found.get("period")
    return out
