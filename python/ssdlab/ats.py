"""ATS/ATC studies: replay DMA addresses through Address Translation Cache models.

>>> from ssdlab import ats
>>> r = ats.study(synth={"ios": 20000}, stu=["2m"], policies=["lru"], assoc=["full"], lines="1-64", pin_rings=True)
>>> r.frame.query("lines == 64 and not pinned").hit_rate.iloc[0] > 0.9
True
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from ssdlab import _core
from ssdlab.api import _path_arg
from ssdlab.exceptions import ConfigError
from ssdlab.names import listing
from ssdlab.plotting import figure, save
from ssdlab.units import format_bytes

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure
    from rich.console import Console


def _bad(path: str, value: object, rule: str) -> ConfigError:
    return ConfigError(f"invalid ATC study: {path} = {value}: {rule}", [{"path": path, "value": str(value), "rule": rule}])


def parse_size(text: Union[str, int], path: str, rule: str = "a size such as 4k or 4096") -> int:
    """Bytes from a size in the config convention (``4k`` = ``4KiB`` = 4096, ``4kB`` = 4000), by
    the core's parser; otherwise a ConfigError naming ``path``, the value and ``rule``."""
    try:
        return _core.parse_size(str(text))
    except ValueError as e:
        raise _bad(path, text, f"{rule}: {e}") from None


def parse_stu(text: Union[str, int]) -> int:
    """An STU as its ATS exponent: ``9``, ``"9"``, ``"2m"``, ``"2MiB"`` and ``2097152`` are all 9."""
    if isinstance(text, int) and text <= 40:
        return text
    t = str(text).strip()
    if t.isdigit() and int(t) <= 40:
        return int(t)
    n = parse_size(t, "stu", "an STU is an exponent (0-40) or a size such as 4k or 2m")
    if n < 4096 or n & (n - 1) or n % 4096:
        raise _bad("stu", text, "an STU size is 4 KiB times a power of two")
    return (n // 4096).bit_length() - 1


def _listed(value: object, name: str) -> list[Any]:
    """An argument that lists values, as a list (a ConfigError naming it if it is not a list)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise _bad(name, repr(value), "must be a list")
    return list(value)


def parse_lines(text: Union[str, Iterable[int]]) -> list[int]:
    """Cache sizes: ``"1-4096"`` (powers of two in the range) or ``"1,2,48"`` or a list."""
    if not isinstance(text, str):
        sizes = _listed(text, "lines")
        if not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x < 1 << 32 for x in sizes):
            raise _bad("lines", repr(sizes), "sizes are whole numbers from 1 to 2^32 - 1")
        return sorted(set(sizes))
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            lo_s, hi_s = part.split("-", 1)
            if not (lo_s.isdigit() and hi_s.isdigit()) or int(lo_s) < 1 or int(hi_s) < int(lo_s):
                raise _bad("lines", part, "a range is LOW-HIGH with 1 <= LOW <= HIGH")
            n = 1
            while n <= int(hi_s):
                if n >= int(lo_s):
                    out.add(n)
                n *= 2
        elif part.isdigit() and int(part) > 0:
            out.add(int(part))
        else:
            raise _bad("lines", part, "sizes are positive whole numbers or LOW-HIGH ranges")
    return sorted(out)


def parse_range(text: str) -> tuple[int, int]:
    """A pinned address range ``START-END`` or ``START+LENGTH`` (hex with 0x, or decimal)."""
    m = re.match(r"^\s*(0x[0-9a-fA-F_]+|\d+)\s*([-+])\s*(0x[0-9a-fA-F_]+|\d+)\s*$", text)
    if not m:
        raise _bad("pin", text, "a range is START-END or START+LENGTH")
    a, op, b = int(m.group(1), 0), m.group(2), int(m.group(3), 0)
    end = a + b if op == "+" else b
    if end <= a:
        raise _bad("pin", text, "a pinned range must end after it starts")
    return a, end


@dataclass
class AtcResult:
    """Hit-rate points of a study, with helpers to tabulate, save and plot them."""

    points: list[dict[str, Any]]
    wall_s: float
    skipped_lines: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def accesses(self) -> int:
        return self.points[0]["accesses"] if self.points else 0

    @property
    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.points)

    def to_json(self) -> dict[str, Any]:
        """The document ``ssdlab atc --json`` prints."""
        return {"points": self.points, "wall_s": self.wall_s, "accesses": self.accesses, "skipped_lines": self.skipped_lines}

    def write(self, path: str) -> None:
        """Writes the points as CSV, JSON or Parquet (by extension)."""
        ext = os.path.splitext(path)[1].lower()
        if ext == ".json":
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.to_json(), f, indent=2)
        elif ext == ".csv":
            self.frame.to_csv(path, index=False)
        elif ext in (".parquet", ".pq"):
            self.frame.to_parquet(path, index=False)
        else:
            raise _bad("output", path, "write .csv, .json or .parquet")

    def plot(self, path: Optional[str] = None) -> Figure:
        """Hit rate against lines, one panel per STU, a curve per policy/associativity/pinning
        (each with its own marker and line style, not colour alone); written to ``path`` (.png
        or .svg) when given. Returns the figure; matplotlib's backend is left as it is."""
        df = self.frame
        stus = sorted(df.stu_bytes.unique())
        fig = figure(5.6 * len(stus), 4.4)
        axes = fig.subplots(1, len(stus), squeeze=False, sharey=True)
        markers = "osD^v<>ph*"
        styles = ["-", "--", ":", "-."]
        for ax, stu in zip(axes[0], stus):
            d = df[df.stu_bytes == stu]
            d = d.assign(assoc=[assoc_label(s, w) for s, w in zip(d.sets, d.ways)])
            for i, ((policy, assoc, pinned), g) in enumerate(d.groupby(["policy", "assoc", "pinned"], sort=True)):
                g = g.sort_values("lines")
                ax.plot(g.lines, g.hit_rate, marker=markers[i % len(markers)], ms=4, lw=1.3, ls=styles[(i // len(markers) + 2 * bool(pinned)) % len(styles)],
                        mfc="none", label=f"{policy}, {assoc}{', SQ/CQ pinned' if pinned else ''}")
            ax.set_xscale("log", base=2)
            ax.set_title(f"STU {format_bytes(stu)}")
            ax.set_xlabel("ATC size (lines)")
            ax.grid(True, alpha=0.3)
        axes[0][0].set_ylabel("hit rate (fraction of lookups)")
        axes[0][0].set_ylim(0, 1.02)
        axes[0][-1].legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        return save(fig, path, dpi=150)

    def print_table(self, out: Console) -> None:
        """The table ``ssdlab atc`` prints: hit rate per size, one table per STU, a column per
        series (policy, associativity, pinning) in name order. Built from the points without
        pandas, whose import would take longer than most studies from a file."""
        from rich.table import Table

        out.print(f"[bold]ssdlab atc[/bold]  {self.accesses:,} lookups in {self.wall_s:.2f} s" + (f"  ({self.skipped_lines} bad lines skipped)" if self.skipped_lines else ""))
        for stu, rows in sorted(series_by_stu(self.points).items()):
            names = sorted({name for row in rows.values() for name in row})
            t = Table(title=f"Hit rate, STU {format_bytes(int(stu))}", title_justify="left")
            t.add_column("lines", justify="right")
            for name in names:
                t.add_column(name, justify="right")
            for lines_, row in sorted(rows.items()):
                t.add_row(str(lines_), *(f"{row[name]:.3f}" if name in row else "" for name in names))
            out.print(t)


def assoc_label(sets: int, ways: int) -> str:
    """How the plot and the table name a cache's associativity: ``full`` for one set (whatever
    its ways), else ``N-way``."""
    return "full" if sets == 1 else f"{ways}-way"


def series_by_stu(points: Iterable[Mapping[str, Any]]) -> dict[int, dict[int, dict[str, float]]]:
    """Hit rates by STU, then cache size (lines), then series name (``lru 4-way``, ``lru full
    pin``): the table :meth:`AtcResult.print_table` prints. A series measured more than once at
    one size shows the mean of its hit rates."""
    found: dict[int, dict[int, dict[str, list[float]]]] = {}
    for p in points:
        name = f"{p['policy']} {assoc_label(p['sets'], p['ways'])}{' pin' if p['pinned'] else ''}"
        found.setdefault(int(p["stu_bytes"]), {}).setdefault(int(p["lines"]), {}).setdefault(name, []).append(float(p["hit_rate"]))
    return {stu: {n: {k: sum(v) / len(v) for k, v in row.items()} for n, row in rows.items()} for stu, rows in found.items()}


def _read_columnar(path: str) -> bytes:
    import numpy as np
    import pyarrow.parquet as pq

    try:
        if path.endswith((".parquet", ".pq")):
            table = pq.read_table(path)
        else:
            import pyarrow.feather as feather

            table = feather.read_table(path)
    except Exception as e:  # pyarrow raises several types for unreadable files
        from ssdlab.exceptions import InputError

        raise InputError(f"{path}: {e}") from None
    names = [n.lower() for n in table.column_names]
    col = names.index("addr") if "addr" in names else 0
    return np.asarray(table.column(col).to_numpy(), dtype="<u8").tobytes()


def study(
    trace: Optional[str] = None,
    *,
    synth: Optional[Mapping[str, Any]] = None,
    from_sim: Any = None,
    stu: Iterable[Union[str, int]] = ("4k", "2m"),
    policies: Iterable[str] = ("lru", "fifo", "random"),
    assoc: Iterable[Union[str, int]] = ("full", 4),
    lines: Union[str, Iterable[int]] = "1-4096",
    pins: Iterable[Union[str, tuple[int, int]]] = (),
    pin_tagged: bool = False,
    pin_rings: bool = False,
    pin_dedicated: bool = False,
    skip_bad: bool = False,
    fmt: Optional[str] = None,
    seed: int = 1,
) -> AtcResult:
    """Replays a trace (text/CSV, raw u64, Parquet/Arrow) or a synthesised stream through ATC models.

    ``synth`` describes a Linux-like stream (``stack``: ``linux-direct``, ``linux-buffered`` or
    ``spdk``; ``queues``, ``bs``, ``ios``, ``vms``, ``memory``, ``buffer_pool``, ``seed``;
    ``split``: VMs divide the host's queues, memory and pool, default true; ``reuse``: ``lifo``
    or ``random`` buffers);
    ``pin_rings`` pins its SQ/CQ rings. ``from_sim`` is a config (preset, path, dict or
    :class:`ssdlab.Config`) whose simulated host and device produce the stream; with it,
    ``pin_tagged`` pins the rings. ``assoc`` takes ``"full"`` or a way count.
    """
    if sum(x is not None for x in (trace, synth, from_sim)) != 1:
        raise _bad("trace", trace, "give one of: a trace file, a synthesised stream, a simulation config")
    if synth is not None and not isinstance(synth, Mapping):
        raise _bad("synth", repr(synth), "must be a table of stream settings, such as {'stack': 'spdk'}")
    if trace is not None:
        trace = _path_arg(trace, "trace")
    for name, flag in (("pin_tagged", pin_tagged), ("pin_rings", pin_rings), ("pin_dedicated", pin_dedicated), ("skip_bad", skip_bad)):
        if not isinstance(flag, bool):
            raise _bad(name, repr(flag), "must be True or False")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise _bad("seed", repr(seed), "must be a whole number from 0 to 2^64 - 1")
    stu, policies, assoc, pins = (_listed(v, n) for v, n in ((stu, "stu"), (policies, "policies"), (assoc, "assoc"), (pins, "pins")))
    if any(not isinstance(p, str) or not p.isprintable() or not p.isascii() for p in policies):
        raise _bad("policies", repr(policies), f"names such as {listing('atc_policy')}")
    if not all(isinstance(p, str) or (isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(x, int) and 0 <= x < 1 << 64 for x in p)) for p in pins):
        raise _bad("pins", repr(pins), "ranges START-END or START+LENGTH, or (start, end) pairs of addresses")
    sim = None
    if from_sim is not None:
        sim = record(from_sim)
    stus = [parse_stu(s) for s in stu]
    assocs = []
    for a in assoc:
        if str(a).lower() in ("full", "fa", "0"):
            assocs.append(0)
        elif str(a).isdigit():
            assocs.append(int(a))
        else:
            raise _bad("assoc", a, "full, or a number of ways")
    ranges = [parse_range(p) if isinstance(p, str) else (int(p[0]), int(p[1])) for p in pins]
    synth_d = dict(synth) if synth is not None else None
    if pin_rings and from_sim is not None:
        pin_tagged = True
    elif pin_rings:
        if synth_d is None:
            raise _bad("pin_rings", True, "ring pinning needs a synthesised stream (use pins or pin_tagged for traces)")
        ranges += [(s, e) for _, s, e in _core.atc_synth_rings(synth_d)]
    addresses = None
    raw = None
    if trace is not None:
        if not os.path.exists(trace):
            from ssdlab.exceptions import InputError

            raise InputError(f"{trace}: no such file")
        if fmt in (None, "parquet", "arrow") and trace.endswith((".parquet", ".pq", ".arrow", ".feather")):
            addresses = _read_columnar(trace)
            trace = None
        elif fmt is not None:
            if fmt not in ("raw", "text", "csv"):
                raise _bad("format", fmt, "raw, text/csv, or parquet/arrow")
            raw = fmt == "raw"
    t0 = time.perf_counter()
    points_json, skipped = _core.atc_study(
        stus, [str(p) for p in policies], assocs, parse_lines(lines), ranges, pin_tagged, pin_dedicated, seed,
        trace, raw, skip_bad, addresses, synth_d, sim,
    )
    return AtcResult(json.loads(points_json), time.perf_counter() - t0, skipped)


def record(config: Any, path: Optional[str] = None) -> _core.Simulation:
    """Runs a simulation recording every device-initiated DMA (SQE/PRP fetches, data, CQEs, in
    device order, with the host memory layout of ``host.dma_layout``); writes it as a text trace
    to ``path`` if given. Returns the simulation (pass it to :func:`study` as ``from_sim``)."""
    from ssdlab import api

    if isinstance(config, _core.Simulation):
        return config
    cfg = api.load_config(config)
    sim = _core.Simulation(cfg._native)
    sim.keep_dma_log()
    sim.run(None)
    if path:
        sim.write_dma_log(_path_arg(path, "path"))
    return sim


def write_synth(path: str, synth: Mapping[str, Any]) -> int:
    """Writes a synthesised stream as a text trace (``kind,addr,size,pasid``); returns its accesses."""
    if not isinstance(synth, Mapping):
        raise _bad("synth", repr(synth), "must be a table of stream settings, such as {'stack': 'spdk'}")
    return _core.atc_synth_write(dict(synth), _path_arg(path, "path"))


def _csv(text: str) -> list[str]:
    """A comma-separated option's items, stripped, empty ones left out."""
    return [x.strip() for x in text.split(",") if x.strip()]


def command(
    out: Console, trace: Optional[str], record_config: Optional[str], synth: Optional[str], synth_opts: dict[str, Any], bs: str, write_trace: Optional[str],
    output: Optional[str], plot: Optional[str], as_json: bool, stu: str, policy: str, assoc: str, force: bool = False, **options: Any,
) -> None:
    """``ssdlab atc``: ``record CONFIG -o FILE`` writes a simulation's DMA stream; otherwise the
    study of ``trace``, of a stream synthesised for the ``synth`` stack (``synth_opts``: ios,
    queues, vms, split, reuse) or of a simulation, written, plotted and printed. ``options``
    are :func:`study`'s (its ``seed`` seeds the synthesis too)."""
    from ssdlab.cliutil import UsageError, check_out, check_plot

    if trace == "record":
        if not record_config or not output:
            raise UsageError("atc record needs a CONFIG and -o FILE")
        check_out(output, "-o", force)
        sim = record(record_config, output)
        out.print(f"wrote {sim.dma_log_len():,} DMA accesses to {output}")
        return
    if record_config is not None:
        raise UsageError(f"unexpected argument {record_config!r} (only `atc record` takes a CONFIG)")
    check_out(output, "-o", force)
    check_plot(plot, force=force)
    check_out(write_trace, "--write-trace", force)
    synth_d = None
    if synth is not None:
        synth_d = {"stack": synth, **synth_opts, "bs": parse_size(bs, "bs"), "seed": options.get("seed", 1)}
        if write_trace:
            write_synth(write_trace, synth_d)
    result = study(trace, synth=synth_d, stu=[s for s in stu.split(",") if s.strip()], policies=_csv(policy), assoc=_csv(assoc), **options)
    if output:
        result.write(output)
    if plot:
        result.plot(plot)
    if as_json:
        out.file.write(json.dumps(result.to_json(), indent=2) + "\n")
        return
    result.print_table(out)
