"""``ssdlab bench``: simulation speed, simulated I/Os per wall-clock second on the core's fixed
scenarios (one core each)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional

from ssdlab import _core

if TYPE_CHECKING:
    from rich.console import Console


def scenarios() -> list[str]:
    """The scenarios' names, in the order ``ssdlab bench`` runs them."""
    return list(_core.bench_scenarios())


def unknown(only: Sequence[str]) -> list[str]:
    """The names in ``only`` that are no scenario."""
    names = scenarios()
    return [n for n in only if n not in names]


def bench(scale: float = 1.0, progress: Optional[Callable[[float], None]] = None, only: Sequence[str] = (), rounds: int = 1) -> list[dict[str, Any]]:
    """Runs every scenario (or those named in ``only``, in the bench's order) with its I/O
    count times ``scale``; one dict per scenario (name, ios, events, wall_s, sim_ios_per_sec,
    precondition_s). An unknown name raises ``ValueError`` naming it and the known ones.

    With ``rounds`` above 1, the whole set runs that many times, one round after another (so
    that a machine whose speed drifts slows every scenario alike), and each scenario's dict is
    its median run (the lower of the middle two for an even count), with ``rounds`` and
    ``runs_wall_s``, every run's wall seconds in the order they ran, added."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, not {rounds}")
    names = scenarios()
    bad = unknown(only)
    if bad:
        raise ValueError(f"no bench scenario {', '.join(repr(n) for n in bad)}; the scenarios are: {', '.join(names)}")
    if only:
        names = [n for n in names if n in only]
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    total, done = rounds * len(names), 0
    for _ in range(rounds):
        for name in names:
            runs[name].append(json.loads(_core.bench_run(name, scale)))
            done += 1
            if progress is not None:
                progress(float(done) / total)
    if rounds == 1:
        return [runs[n][0] for n in names]
    rows = []
    for name in names:
        row = dict(sorted(runs[name], key=lambda r: r["wall_s"])[(rounds - 1) // 2])
        row["rounds"] = rounds
        row["runs_wall_s"] = [r["wall_s"] for r in runs[name]]
        rows.append(row)
    return rows


def print_table(out: Console, rows: list[dict[str, Any]]) -> None:
    """The table ``ssdlab bench`` prints."""
    from rich.table import Table

    rounds = max((r.get("rounds", 1) for r in rows), default=1)
    each = f"; each row the median of {rounds} runs, min-max s their spread" if rounds > 1 else ""
    t = Table(
        title=f"ssdlab bench (one core; wall s times the run, precondition s the set-up; atc-* count addresses, trace-* lines{each})",
        title_justify="left",
    )
    cols = ["scenario", "I/Os", "events", "wall s", "sim I/Os per s", "precondition s"]
    if rounds > 1:
        cols.insert(4, "min-max s")
    for col in cols:
        t.add_column(col, justify="right")
    for r in rows:
        cells = [r["name"], f"{r['ios']:,}", f"{r['events']:,}", f"{r['wall_s']:.3f}", f"{r['sim_ios_per_sec']:,.0f}", f"{r['precondition_s']:.2f}"]
        if rounds > 1:
            walls = r["runs_wall_s"]
            cells.insert(4, f"{min(walls):.3f}-{max(walls):.3f}")
        t.add_row(*cells)
    out.print(t)
