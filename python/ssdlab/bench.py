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


def bench(scale: float = 1.0, progress: Optional[Callable[[float], None]] = None, only: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Runs every scenario (or those named in ``only``, in the bench's order) with its I/O
    count times ``scale``; one dict per scenario (name, ios, events, wall_s, sim_ios_per_sec,
    precondition_s). An unknown name raises ``ValueError`` naming it and the known ones."""
    rows = []
    names = scenarios()
    bad = unknown(only)
    if bad:
        raise ValueError(f"no bench scenario {', '.join(repr(n) for n in bad)}; the scenarios are: {', '.join(names)}")
    if only:
        names = [n for n in names if n in only]
    for i, name in enumerate(names):
        rows.append(json.loads(_core.bench_run(name, scale)))
        if progress is not None:
            progress(float(i + 1) / len(names))
    return rows


def print_table(out: Console, rows: list[dict[str, Any]]) -> None:
    """The table ``ssdlab bench`` prints."""
    from rich.table import Table

    t = Table(
        title="ssdlab bench (one core; wall s times the run, precondition s the set-up; atc-* count addresses, trace-* lines)",
        title_justify="left",
    )
    for col in ("scenario", "I/Os", "events", "wall s", "sim I/Os per s", "precondition s"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(r["name"], f"{r['ios']:,}", f"{r['events']:,}", f"{r['wall_s']:.3f}", f"{r['sim_ios_per_sec']:,.0f}", f"{r['precondition_s']:.2f}")
    out.print(t)
