"""What ``ssdlab run`` prints: a run's summary as typed records, and the tables made of them.

:meth:`RunSummary.from_json` reads the summary the core returns (``Simulation.summary()``, the
dict in :attr:`ssdlab.Result.summary`), keeping the fields the tables show; keys it does not
know are ignored, and the optional sections (jobs, tenants, flash, ATC, steady state, time
series, replay) are ``None`` or empty when the run has none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ssdlab import api
from ssdlab.cliutil import escape
from ssdlab.units import format_bytes

if TYPE_CHECKING:
    from rich.console import Console

Json = Mapping[str, Any]


def _section(d: Json, key: str) -> Optional[Json]:
    """An optional object of the summary: None when absent, null or empty."""
    v = d.get(key)
    return v if v else None


@dataclass(frozen=True)
class Latency:
    mean: float
    p50: float
    p99: float
    p999: float
    p9999: float
    max: float

    @classmethod
    def from_json(cls, d: Json) -> Latency:
        return cls(d["mean"], d["p50"], d["p99"], d["p999"], d["p9999"], d["max"])


@dataclass(frozen=True)
class OpStats:
    """One direction (read, write or trim) of the run, a job or a tenant."""

    ios: int
    iops: float
    bandwidth_mib_s: float
    latency_us: Latency
    breakdown_us: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: Json) -> OpStats:
        return cls(d["ios"], d["iops"], d["bandwidth_mib_s"], Latency.from_json(d["latency_us"]), dict(d.get("breakdown_us", {})))


@dataclass(frozen=True)
class JobStats:
    name: str
    ios: int
    iops: float
    bandwidth_mib_s: float
    mean_latency_us: float
    runtime_s: float  # the job's own time, from its start to its last completion (fio's runtime)

    @classmethod
    def from_json(cls, d: Json) -> JobStats:
        return cls(d["name"], d["ios"], d["iops"], d["bandwidth_mib_s"], d["mean_latency_us"], d["runtime_s"])


@dataclass(frozen=True)
class TenantFlash:
    waf: float
    gc_paid_own: int
    gc_paid_others: int

    @classmethod
    def from_json(cls, d: Json) -> TenantFlash:
        return cls(d["waf"], d["gc_paid_own"], d["gc_paid_others"])


@dataclass(frozen=True)
class Slo:
    kind: str
    compliance: float

    @classmethod
    def from_json(cls, d: Json) -> Slo:
        return cls(d["kind"], d["compliance"])


@dataclass(frozen=True)
class TenantStats:
    name: str
    weight: int
    ios: int
    iops: float
    bandwidth_mib_s: float
    proportionality: float
    weight_ratio: float
    ops: dict[str, OpStats]
    flash: Optional[TenantFlash] = None
    slo: list[Slo] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Json) -> TenantStats:
        flash = _section(d, "flash")
        return cls(
            d["name"], d["weight"], d["ios"], d["iops"], d["bandwidth_mib_s"], d["proportionality"], d["weight_ratio"],
            {op: OpStats.from_json(d[op]) for op in api.OPS},
            TenantFlash.from_json(flash) if flash else None,
            [Slo.from_json(x) for x in d.get("slo") or []],
        )


@dataclass(frozen=True)
class Host:
    cpu_us_per_io: float
    cpus_per_gb_s: float

    @classmethod
    def from_json(cls, d: Json) -> Host:
        return cls(d["cpu_us_per_io"], d["cpus_per_gb_s"])


@dataclass(frozen=True)
class Atc:
    lines: int
    ways: int
    stu_bytes: int
    hit_rate: float
    misses_per_io: float
    miss_round_trip_us: float
    iotlb_misses: int

    @classmethod
    def from_json(cls, d: Json) -> Atc:
        return cls(d["lines"], d["ways"], d["stu_bytes"], d["hit_rate"], d["misses_per_io"], d["miss_round_trip_us"], d["iotlb_misses"])


@dataclass(frozen=True)
class Precondition:
    state: str
    drive_writes: float
    waf: float
    valid_fraction: float
    wall_s: float

    @classmethod
    def from_json(cls, d: Json) -> Precondition:
        return cls(d["state"], d["drive_writes"], d["waf"], d["valid_fraction"], d["wall_s"])


@dataclass(frozen=True)
class Integrity:
    checked: int
    lost: int
    stale: int
    duplicated: int
    mapped: int
    violation: Optional[str]

    @classmethod
    def from_json(cls, d: Json) -> Integrity:
        return cls(d["checked"], d["lost"], d["stale"], d["duplicated"], d["mapped"], d.get("violation"))


@dataclass(frozen=True)
class Flash:
    waf: float
    gc_victims: int
    gc_writes: int
    gc_runs: int
    erases: int
    free_blocks: int
    erase_count_min: int
    erase_count_max: int
    erase_count_mean: float
    buffer_hits: int
    precondition: Precondition
    integrity: Optional[Integrity] = None

    @classmethod
    def from_json(cls, d: Json) -> Flash:
        f, integrity = d["ftl"], _section(d, "integrity")
        return cls(
            d["waf"], f["gc_victims"], f["gc_writes"], f["gc_runs"], f["erases"], d["free_blocks"], d["erase_count_min"], d["erase_count_max"],
            d["erase_count_mean"], d["buffer_hits"], Precondition.from_json(d["precondition"]), Integrity.from_json(integrity) if integrity else None,
        )


@dataclass(frozen=True)
class SteadyState:
    metric: str
    rounds: list[Optional[float]]
    reached: bool
    first: int
    last: int
    average: float
    data_excursion: float
    slope_excursion: float

    @classmethod
    def from_json(cls, d: Json) -> SteadyState:
        return cls(d["metric"], list(d["rounds"]), d["reached"], d["first"], d["last"], d["average"], d["data_excursion"], d["slope_excursion"])


@dataclass(frozen=True)
class Series:
    interval_s: float
    intervals: int  # the device's rows (tenant "all")

    @classmethod
    def from_json(cls, d: Json) -> Series:
        return cls(d["interval_s"], sum(1 for row in d["rows"] if row["tenant"] == "all"))


@dataclass(frozen=True)
class Replay:
    trace: str
    format: str
    mode: str
    issued: int
    lines: int
    remapped: int
    realigned: int
    reordered: int
    skipped_flushes: int
    bad_lines: int
    zero_length: int

    @classmethod
    def from_json(cls, d: Json) -> Replay:
        return cls(d["trace"], d["format"], d["mode"], d["issued"], d["lines"], d["remapped"], d["realigned"], d["reordered"], d["skipped_flushes"], d["bad_lines"], d["zero_length"])


@dataclass(frozen=True)
class RunSummary:
    """The fields of a run's summary that ``ssdlab run`` prints."""

    version: str
    config_hash: str
    seed: int
    ios: int
    window_s: float
    events: int
    wall_time_s: float
    ops: dict[str, OpStats]
    utilisation: dict[str, float]
    jobs: list[JobStats] = field(default_factory=list)
    tenants: list[TenantStats] = field(default_factory=list)
    host: Optional[Host] = None
    ats: Optional[Atc] = None
    flash: Optional[Flash] = None
    steady_state: Optional[SteadyState] = None
    timeseries: Optional[Series] = None
    replay: Optional[Replay] = None

    @classmethod
    def from_json(cls, d: Json) -> RunSummary:
        """From the summary dict (``Result.summary``); unknown keys are ignored."""
        host, ats, flash, steady, series, replay = (_section(d, k) for k in ("host", "ats", "flash", "steady_state", "timeseries", "replay"))
        return cls(
            d["version"], d["config_hash"], d["seed"], d["ios"], d["window_s"], d["events"], d["wall_time_s"],
            {op: OpStats.from_json(d[op]) for op in api.OPS}, dict(d["utilisation"]),
            [JobStats.from_json(j) for j in d.get("jobs") or []],
            [TenantStats.from_json(t) for t in d.get("tenants") or []],
            Host.from_json(host) if host else None,
            Atc.from_json(ats) if ats else None,
            Flash.from_json(flash) if flash else None,
            SteadyState.from_json(steady) if steady else None,
            Series.from_json(series) if series else None,
            Replay.from_json(replay) if replay else None,
        )

    @classmethod
    def from_text(cls, text: str) -> RunSummary:
        """From the JSON text ``Simulation.summary()`` returns."""
        return cls.from_json(json.loads(text))


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}"


def print_summary(out: Console, s: RunSummary, description: str, overrides: Sequence[tuple[str, str]] = ()) -> None:
    """The run's tables and lines: ``description`` is the config's, ``overrides`` what the
    command line changed in it."""
    from rich.table import Table

    changed = "; with " + ", ".join(f"{k}={v}" for k, v in overrides) if overrides else ""
    out.print(f"[bold]ssdlab {s.version}[/bold]  {escape(description + changed)}")
    out.print(
        f"config {s.config_hash}  seed {s.seed}  {s.ios:,} I/Os in {s.window_s * 1e3:,.3f} ms simulated"
        f"  ({s.events:,} events, {s.wall_time_s:.2f} s wall)"
    )
    ops = [op for op in api.OPS if s.ops[op].ios > 0]
    t = Table(title="Throughput and latency (us)", title_justify="left")
    for col in ("op", "I/Os", "IOPS", "MiB/s", "mean", "p50", "p99", "p99.9", "p99.99", "max"):
        t.add_column(col, justify="right")
    for op in ops:
        o, lat = s.ops[op], s.ops[op].latency_us
        t.add_row(op, f"{o.ios:,}", _fmt(o.iops, 0), _fmt(o.bandwidth_mib_s, 1), *(_fmt(v) for v in (lat.mean, lat.p50, lat.p99, lat.p999, lat.p9999, lat.max)))
    out.print(t)
    if len(s.jobs) > 1:
        jt = Table(title="Per job", title_justify="left")
        for col in ("job", "I/Os", "runtime ms", "IOPS", "MiB/s", "mean us"):
            jt.add_column(col, justify="right")
        for j in s.jobs:
            jt.add_row(j.name, f"{j.ios:,}", _fmt(j.runtime_s * 1e3, 2), _fmt(j.iops, 0), _fmt(j.bandwidth_mib_s, 1), _fmt(j.mean_latency_us))
        out.print(jt)
    if len(s.tenants) > 1:
        _print_tenants(out, s.tenants)
    _print_breakdown(out, s, ops)
    _print_lines(out, s)


def _print_tenants(out: Console, tenants: list[TenantStats]) -> None:
    from rich.table import Table

    tt = Table(title="Per tenant", title_justify="left")
    flash_t = all(t.flash for t in tenants)
    slos = any(t.slo for t in tenants)
    dirs = [op for op in api.OPS if any(t.ops[op].ios for t in tenants)]
    cols = ["tenant", "weight", "I/Os", "IOPS", "MiB/s", "BW ratio", "weight ratio"]
    cols += [f"{op} {k} us" for op in dirs for k in ("mean", "p99")]
    if flash_t:
        cols += ["WAF", "GC moved own", "GC moved others"]
    if slos:
        cols += ["SLO met"]
    for col in cols:
        tt.add_column(col, justify="right")
    for t in tenants:
        lat = [x for op in dirs for x in ((_fmt(t.ops[op].latency_us.mean, 0), _fmt(t.ops[op].latency_us.p99, 0)) if t.ops[op].ios else ("-", "-"))]
        row = [escape(t.name), str(t.weight), f"{t.ios:,}", _fmt(t.iops, 0), _fmt(t.bandwidth_mib_s, 2), f"{t.proportionality:.2f}", f"{t.weight_ratio:.2f}", *lat]
        if t.flash is not None and flash_t:
            row += [f"{t.flash.waf:.2f}", f"{t.flash.gc_paid_own:,}", f"{t.flash.gc_paid_others:,}"]
        if slos:
            row += [", ".join(f"{x.kind} {100 * x.compliance:.0f}%" for x in t.slo) or "-"]
        tt.add_row(*row)
    out.print(tt)
    if flash_t:
        out.print("  GC moved own/others: units GC moved on behalf of the tenant's writes, its own and other tenants'")


def _print_breakdown(out: Console, s: RunSummary, ops: list[str]) -> None:
    from rich.table import Table

    b = Table(title="Where the time goes (mean us)", title_justify="left")
    b.add_column("component")
    for op in ops:
        b.add_column(op, justify="right")
        b.add_column("%", justify="right")
    for comp in api.components():
        row = [comp]
        for op in ops:
            parts = s.ops[op].breakdown_us
            v, total = parts[comp], sum(parts.values()) or 1.0
            row += [_fmt(v, 3), f"{100 * v / total:.1f}"]
        b.add_row(*row)
    b.add_row("[bold]total[/bold]", *sum(([_fmt(sum(s.ops[op].breakdown_us.values()), 3), "100.0"] for op in ops), []))
    out.print(b)


def _print_lines(out: Console, s: RunSummary) -> None:
    """The one-line sections: utilisation, host CPU, ATC, flash, steady state, series, replay."""
    u = dict(s.utilisation)
    flash = s.flash
    if flash:
        u["nand dies"] = u.pop("media_units")
        u["nand channels"] = u.pop("media_bus")
    out.print("utilisation: " + "  ".join(f"{k.replace('_', ' ')} {100 * v:.1f}%" for k, v in u.items()))
    if s.host:
        out.print(f"host CPU: {s.host.cpu_us_per_io:.2f} us per I/O, {s.host.cpus_per_gb_s:.2f} cores per GB/s")
    a = s.ats
    if a:
        out.print(
            f"ATC: {a.lines} lines ({a.ways}-way) of {format_bytes(a.stu_bytes)}: hit rate {a.hit_rate:.4f}, "
            f"{a.misses_per_io:.3f} misses per I/O at {a.miss_round_trip_us:.3f} us each, {a.iotlb_misses:,} IOTLB misses"
        )
    if flash:
        p = flash.precondition
        out.print(
            f"flash: WAF {flash.waf:.2f}  GC victims {flash.gc_victims:,} (units moved {flash.gc_writes:,}, runs {flash.gc_runs:,})"
            f"  erases {flash.erases:,}  free blocks {flash.free_blocks:,}"
            f"  erase count {flash.erase_count_min}-{flash.erase_count_max} (mean {flash.erase_count_mean:.1f})"
            f"  buffer hits {flash.buffer_hits:,}"
        )
        pre = f"preconditioned: {p.state}"
        if p.state == "aged":
            pre += f" ({p.drive_writes:.2f} drive writes of random overwrites, WAF {p.waf:.2f}, valid fraction {p.valid_fraction:.3f})"
        out.print(pre + f" in {p.wall_s:.2f} s")
        i = flash.integrity
        if i:
            found = i.lost + i.stale + i.duplicated
            verdict = "ok" if not found and not i.violation else "FAULTS FOUND"
            out.print(
                f"integrity: {verdict}: {i.checked:,} units read and checked, lost {i.lost:,}, stale {i.stale:,}, duplicated {i.duplicated:,};"
                f" {i.mapped:,} units mapped at the end, invariants {escape(i.violation) if i.violation else 'hold'}"
            )
    st = s.steady_state
    if st:
        rounds = st.rounds
        shown = "  ".join("-" if v is None else f"{v:,.4g}" for v in rounds[-12:])
        out.print(f"rounds of {escape(st.metric)}{' (last 12)' if len(rounds) > 12 else ''}: {shown}")
        if st.reached:
            out.print(
                f"steady state (SNIA PTS) of {escape(st.metric)}: reached in rounds {st.first + 1}-{st.last + 1}, average {st.average:,.4g}"
                f" (data excursion {100 * st.data_excursion:.1f} %, slope excursion {100 * st.slope_excursion:.1f} %)"
            )
        else:
            out.print(f"steady state (SNIA PTS) of {escape(st.metric)}: not reached in {len(rounds)} rounds")
    if s.timeseries:
        ts = s.timeseries
        out.print(f"time series: {ts.intervals:,} intervals of {ts.interval_s * 1e3:g} ms (in --json, or Result.timeseries)")
    r = s.replay
    if r:
        out.print(
            f"replay: {r.trace} ({r.format}, {r.mode})  {r.issued:,} records issued from {r.lines:,} lines"
            f"  remapped {r.remapped:,}  realigned {r.realigned:,}  reordered {r.reordered:,}"
            f"  skipped: {r.skipped_flushes:,} flushes, {r.bad_lines:,} bad lines, {r.zero_length:,} zero-length"
        )


def print_result(out: Console, result: api.Result, overrides: Sequence[tuple[str, str]] = ()) -> None:
    """:func:`print_summary` of a run's :class:`~ssdlab.Result`."""
    print_summary(out, RunSummary.from_json(result.summary), result.config.description, overrides)


def print_metrics(out: Console, frame: Any, as_json: bool) -> None:
    """The metric list (``ssdlab run --metrics``): a table, or JSON `[{name, unit, kind, description}]`."""
    rows = frame.reset_index().to_dict(orient="records")
    if as_json:
        out.file.write(json.dumps(rows, indent=2) + "\n")
        return
    from rich.table import Table

    table = Table(title="Metrics (counters count over the measurement window; gauges are states)", title_justify="left")
    for col in ("name", "unit", "kind", "description"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(escape(r["name"]), escape(r["unit"]), r["kind"], escape(r["description"]))
    out.print(table)


def run_jobs(name: str, args: list[str], device: Optional[str], settings: list[tuple[str, str]], seed: Optional[int], output_format: str, max_memory: Optional[str] = None) -> None:
    """``ssdlab run`` of a fio job file (``name``) or of fio's options (``args``): each group's
    tables, or fio's own output (``json``, ``json+`` or ``terse``)."""
    from ssdlab import fiojob
    from ssdlab.cliutil import Bar, err, out

    text = fiojob.from_args(args) if args else None
    fio_output = output_format != "normal"
    plan = api.load_jobfile(name, device, seed=seed, settings=settings, text=text, fio_percentiles=fio_output)
    if plan.ignored:
        err.print(f"{name}: ignored (no meaning for a simulated device): {', '.join(plan.ignored)}")
    for g in plan.groups:
        for note in g.notes:
            err.print(escape(note))
    with Bar("simulating") as bar:
        results = plan.run(progress=bar, max_memory=max_memory)
    if output_format in ("json", "json+"):
        out.file.write(json.dumps(api.fio_json(plan, results, plus=output_format == "json+"), indent=2) + "\n")
        return
    if output_format == "terse":
        out.file.write(api.fio_terse(plan, results))
        return
    for gid, result in enumerate(results):
        s = RunSummary.from_json(result.summary)
        out.print(f"[bold]group {gid}[/bold]: {', '.join(j.name for j in s.jobs)}")
        print_summary(out, s, result.config.description)


def print_served(out: Console, result: dict[str, Any], description: str, overrides: Sequence[tuple[str, str]], as_json: bool) -> None:
    """What ``ssdlab serve`` prints at the end: the run's tables (as ``ssdlab run``'s) and the
    emulation's figures, or one JSON document with both."""
    from rich.table import Table

    from ssdlab.emulate import keeps_up

    em = result["emulation"]
    s = result["summary"]
    ios = max(1, s["read"]["ios"] + s["write"]["ios"])
    mean = (s["read"]["latency_us"]["mean"] * s["read"]["ios"] + s["write"]["latency_us"]["mean"] * s["write"]["ios"]) / ios
    ok, why = keeps_up(em, mean)
    em = {**em, "kept_up": ok, "verdict": why}
    if as_json:
        out.file.write(json.dumps({**s, "emulation": em}, indent=2) + "\n")
        return
    print_summary(out, RunSummary.from_json(s), description, overrides)
    table = Table(title="Emulation (requests through NBD; lag: how far behind the wall clock a completion was processed, simulated us)", title_justify="left")
    for col in ("read", "write", "trim", "zero", "flush", "refused", "lag p50", "p90", "p99", "p99.9", "max", "server overhead"):
        table.add_column(col, justify="right")
    lag = [f"{v / 1e3:,.1f}" for v in em["lag_ns"]]
    table.add_row(*[f"{n:,}" for n in em["requests"]], f"{em['refused']:,}", *lag, f"{em['server_overhead_us']:,.1f} us")
    out.print(table)
    st = em["store"]
    out.print(f"time scale {em['time_scale']:g}: {em['simulated_s']:.3f} s simulated in {em['wall_s']:.3f} s wall; {why}", highlight=False)
    if em["requests"][4]:
        out.print(f"flushes: mean {em['flush_mean_us']:,.1f} us simulated; {em['flush_padding_units']:,} units of padding closed partly filled pages", highlight=False)
    checked = f"; {st['checked']:,} chunk reads checked, {st['corrupt']:,} corrupt" if st["checked"] else ""
    out.print(f"data store: {st['chunks_in_memory']:,} chunks in memory, {st['chunks_in_file']:,} in the spill file{checked}", highlight=False)
