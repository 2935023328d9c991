"""The ``ssdlab`` command line.

Every user error (bad config, bad option, unreadable file) prints a message naming what is
wrong and exits with code 2, and Ctrl-C prints "interrupted" and exits with 130; no traceback is
shown (set ``SSDLAB_DEBUG=1`` to see one).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, Optional, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from ssdlab import _core, api, ats
from ssdlab.decompose import SEED001_MEDIA, SEED001_PARTS, decompose as run_decomposition, plot_decomposition
from ssdlab.exceptions import SsdlabError, issues
from ssdlab.series import plot_timeseries

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=False,
    help="ssdlab: a laboratory for NVMe SSD architecture.",
)
config_app = typer.Typer(help="Inspect configurations.", no_args_is_help=True)
app.add_typer(config_app, name="config")
trace_app = typer.Typer(help="Block I/O traces: statistics and conversion.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")

# Off a terminal (pipes, CI logs) rich would wrap tables at 80 columns; give them room.
out = Console(width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


class UsageError(Exception):
    """A malformed command-line argument (exit code 2)."""


def _exit_interrupted() -> NoReturn:
    """Ctrl-C: one line on stderr and exit code 130, never a traceback."""
    err.print("interrupted")
    sys.exit(130)


F = TypeVar("F", bound=Callable[..., Any])


def _ctrl_c_exits_130(command: F) -> F:
    """Wraps a command so that Ctrl-C anywhere in it ends with :func:`_exit_interrupted` (the
    command-line framework would otherwise print its own "Aborted!" and exit with 1)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            _exit_interrupted()

    return wrapper  # type: ignore[return-value]


def _check_plot(path: Optional[str], flag: str = "--plot") -> None:
    if path and not path.lower().endswith((".png", ".svg")):
        raise UsageError(f"{flag} {path!r}: write a .png or .svg file")
    _check_out(path, flag)


def _check_out(path: Optional[str], flag: str) -> None:
    """A file to write must go to a directory that exists (an exit-2 error naming it, before any work)."""
    if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UsageError(f"{flag} {path}: its directory {os.path.dirname(os.path.abspath(path))} does not exist")


def _pairs(items: list[str], option: str, prefix: str = "") -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} {item!r}: expected KEY=VALUE")
        key = key.strip()
        if prefix and not key.startswith(prefix):
            key = prefix + key
        pairs.append((key, value.strip()))
    return pairs


def _fio_size(option: str, key: str, value: str, text: str) -> str:
    """A size in fio's units (`kb_base=1024`: `4k`, `4kB` and `4KiB` are 4096) as exact bytes."""
    try:
        return f"{_core.parse_size(text.strip(), True)}B"
    except (ValueError, SsdlabError) as e:
        raise UsageError(f"{option} {key.removeprefix('workload.')}={value}: {e.args[0] if e.args else e}") from None


def _fio_values(pairs: list[tuple[str, str]], option: str = "-w") -> list[tuple[str, str]]:
    """`-w` values read as fio reads them, as a job file's are: sizes in fio's units (`bs=4kB`
    is 4096 B, as in a job file, where a config's `4kB` is 4000 B), and `rw=read:28k` (skip
    28 KiB after each I/O; `-8k` steps back) as `rw` and `rw_skip`."""
    out = []
    for key, value in pairs:
        if key in ("workload.bs", "workload.size", "workload.offset"):
            out.append((key, ",".join(_fio_size(option, key, value, part) for part in value.split(","))))
            continue
        if key == "workload.bssplit":
            lists = [":".join(f"{_fio_size(option, key, value, size)}/{pct}" for size, _, pct in (item.partition("/") for item in part.split(":") if item.strip())) for part in value.split(",")]
            out.append((key, ",".join(lists)))
            continue
        rw, sep, modifier = value.partition(":")
        if key != "workload.rw" or not sep:
            out.append((key, value))
            continue
        if rw.strip().lower().startswith("rand"):
            raise UsageError(f"{option} rw={value}: a skip applies to sequential jobs (read, write, rw)")
        m = modifier.strip()
        skip = int(_fio_size(option, key, value, m.lstrip("+-"))[:-1])
        out += [(key, rw.strip()), ("workload.rw_skip", str(-skip if m.startswith("-") else skip))]
    return out


P = TypeVar("P", bound="_Progress")


class _Progress:
    """Progress on stderr, shown only on a terminal and only once a pass takes more than 1 s;
    a context manager that clears it at the end (or on an error or Ctrl-C)."""

    total: Optional[float] = None

    def __init__(self, label: str) -> None:
        self.label = label
        self.start = time.monotonic()
        self.enabled = err.is_terminal
        self.progress: Optional[Progress] = None
        self.task: Any = None

    def columns(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def update(self, completed: float) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            if time.monotonic() - self.start < 1.0:
                return
            self.progress = Progress(TextColumn("{task.description}"), *self.columns(), console=err, transient=True)
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=self.total)
        self.progress.update(self.task, completed=completed)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def __enter__(self: P) -> P:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Bar(_Progress):
    """A bar for passes of known length: ``bar(fraction)``."""

    total = 1.0

    def columns(self) -> tuple[Any, ...]:
        return BarColumn(), TaskProgressColumn(), TimeRemainingColumn()

    def __call__(self, fraction: float) -> None:
        self.update(min(max(fraction, 0.0), 1.0))


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}"


def _print_summary(result: api.Result, overrides: Sequence[tuple[str, str]] = ()) -> None:
    s = result.summary
    cfg = result.config
    # The config that ran: its description, and what the command line changed in it.
    changed = "; with " + ", ".join(f"{k}={v}" for k, v in overrides) if overrides else ""
    out.print(f"[bold]ssdlab {s['version']}[/bold]  {escape(cfg.description + changed)}")
    out.print(
        f"config {s['config_hash']}  seed {s['seed']}  {s['ios']:,} I/Os in {s['window_s'] * 1e3:,.3f} ms simulated"
        f"  ({s['events']:,} events, {s['wall_time_s']:.2f} s wall)"
    )
    t = Table(title="Throughput and latency (us)", title_justify="left")
    for col in ("op", "I/Os", "IOPS", "MiB/s", "mean", "p50", "p99", "p99.9", "p99.99", "max"):
        t.add_column(col, justify="right")
    for op in api.OPS:
        o = s[op]
        if o["ios"] == 0:
            continue
        lat = o["latency_us"]
        t.add_row(
            op, f"{o['ios']:,}", _fmt(o["iops"], 0), _fmt(o["bandwidth_mib_s"], 1),
            *(_fmt(lat[k]) for k in ("mean", "p50", "p99", "p999", "p9999", "max")),
        )
    out.print(t)
    if len(s.get("jobs", [])) > 1:
        jt = Table(title="Per job", title_justify="left")
        for col in ("job", "I/Os", "IOPS", "MiB/s", "mean us"):
            jt.add_column(col, justify="right")
        for j in s["jobs"]:
            jt.add_row(j["name"], f"{j['ios']:,}", _fmt(j["iops"], 0), _fmt(j["bandwidth_mib_s"], 1), _fmt(j["mean_latency_us"]))
        out.print(jt)
    if len(s.get("tenants", [])) > 1:
        tt = Table(title="Per tenant", title_justify="left")
        flash_t = all(t.get("flash") for t in s["tenants"])
        slos = any(t.get("slo") for t in s["tenants"])
        dirs = [op for op in api.OPS if any(t[op]["ios"] for t in s["tenants"])]
        cols = ["tenant", "weight", "I/Os", "IOPS", "MiB/s", "BW ratio", "weight ratio"]
        cols += [f"{op} {k} us" for op in dirs for k in ("mean", "p99")]
        if flash_t:
            cols += ["WAF", "GC moved own", "GC moved others"]
        if slos:
            cols += ["SLO met"]
        for col in cols:
            tt.add_column(col, justify="right")
        for t in s["tenants"]:
            lat = [x for op in dirs for x in ((_fmt(t[op]["latency_us"]["mean"], 0), _fmt(t[op]["latency_us"]["p99"], 0)) if t[op]["ios"] else ("-", "-"))]
            row = [escape(t["name"]), str(t["weight"]), f"{t['ios']:,}", _fmt(t["iops"], 0), _fmt(t["bandwidth_mib_s"], 2),
                   f"{t['proportionality']:.2f}", f"{t['weight_ratio']:.2f}", *lat]
            if flash_t:
                f = t["flash"]
                row += [f"{f['waf']:.2f}", f"{f['gc_paid_own']:,}", f"{f['gc_paid_others']:,}"]
            if slos:
                row += [", ".join(f"{x['kind']} {100 * x['compliance']:.0f}%" for x in t.get("slo", [])) or "-"]
            tt.add_row(*row)
        out.print(tt)
        if flash_t:
            out.print("  GC moved own/others: units GC moved on behalf of the tenant's writes, its own and other tenants'")
    b = Table(title="Where the time goes (mean us)", title_justify="left")
    b.add_column("component")
    ops = [op for op in api.OPS if s[op]["ios"] > 0]
    for op in ops:
        b.add_column(op, justify="right")
        b.add_column("%", justify="right")
    for comp in api.components():
        row = [comp]
        for op in ops:
            v = s[op]["breakdown_us"][comp]
            total = sum(s[op]["breakdown_us"].values()) or 1.0
            row += [_fmt(v, 3), f"{100 * v / total:.1f}"]
        b.add_row(*row)
    b.add_row("[bold]total[/bold]", *sum(([_fmt(sum(s[op]["breakdown_us"].values()), 3), "100.0"] for op in ops), []))
    out.print(b)
    u = dict(s["utilisation"])
    flash = s.get("flash")
    if flash:
        u["nand dies"] = u.pop("media_units")
        u["nand channels"] = u.pop("media_bus")
    out.print("utilisation: " + "  ".join(f"{k.replace('_', ' ')} {100 * v:.1f}%" for k, v in u.items()))
    h = s.get("host")
    if h:
        out.print(f"host CPU: {h['cpu_us_per_io']:.2f} us per I/O, {h['cpus_per_gb_s']:.2f} cores per GB/s")
    a = s.get("ats")
    if a:
        out.print(
            f"ATC: {a['lines']} lines ({a['ways']}-way) of {ats._human(a['stu_bytes'])}: hit rate {a['hit_rate']:.4f}, "
            f"{a['misses_per_io']:.3f} misses per I/O at {a['miss_round_trip_us']:.3f} us each, {a['iotlb_misses']:,} IOTLB misses"
        )
    if flash:
        f, p = flash["ftl"], flash["precondition"]
        out.print(
            f"flash: WAF {flash['waf']:.2f}  GC victims {f['gc_victims']:,} (units moved {f['gc_writes']:,}, runs {f['gc_runs']:,})"
            f"  erases {f['erases']:,}  free blocks {flash['free_blocks']:,}"
            f"  erase count {flash['erase_count_min']}-{flash['erase_count_max']} (mean {flash['erase_count_mean']:.1f})"
            f"  buffer hits {flash['buffer_hits']:,}"
        )
        pre = f"preconditioned: {p['state']}"
        if p["state"] == "aged":
            pre += f" ({p['drive_writes']:.2f} drive writes of random overwrites, WAF {p['waf']:.2f}, valid fraction {p['valid_fraction']:.3f})"
        out.print(pre + f" in {p['wall_s']:.2f} s")
        i = flash.get("integrity")
        if i:
            found = i["lost"] + i["stale"] + i["duplicated"]
            verdict = "ok" if not found and not i["violation"] else "FAULTS FOUND"
            out.print(
                f"integrity: {verdict}: {i['checked']:,} units read and checked, lost {i['lost']:,}, stale {i['stale']:,}, duplicated {i['duplicated']:,};"
                f" {i['mapped']:,} units mapped at the end, invariants {escape(i['violation']) if i['violation'] else 'hold'}"
            )
    st = s.get("steady_state")
    if st:
        rounds = st["rounds"]
        shown = "  ".join("-" if v is None else f"{v:,.4g}" for v in rounds[-12:])
        out.print(f"rounds of {escape(st['metric'])}{' (last 12)' if len(rounds) > 12 else ''}: {shown}")
        if st["reached"]:
            out.print(
                f"steady state (SNIA PTS) of {escape(st['metric'])}: reached in rounds {st['first'] + 1}-{st['last'] + 1}, average {st['average']:,.4g}"
                f" (data excursion {100 * st['data_excursion']:.1f} %, slope excursion {100 * st['slope_excursion']:.1f} %)"
            )
        else:
            out.print(f"steady state (SNIA PTS) of {escape(st['metric'])}: not reached in {len(rounds)} rounds")
    ts = s.get("timeseries")
    if ts:
        n = sum(1 for row in ts["rows"] if row["tenant"] == "all")
        out.print(f"time series: {n:,} intervals of {ts['interval_s'] * 1e3:g} ms (in --json, or Result.timeseries)")
    r = s.get("replay")
    if r:
        out.print(
            f"replay: {r['trace']} ({r['format']}, {r['mode']})  {r['issued']:,} records issued from {r['lines']:,} lines"
            f"  remapped {r['remapped']:,}  realigned {r['realigned']:,}  reordered {r['reordered']:,}"
            f"  skipped: {r['skipped_flushes']:,} flushes, {r['bad_lines']:,} bad lines, {r['zero_length']:,} zero-length"
        )


JOBFILE_SUFFIXES = (".fio", ".job", ".ini")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@_ctrl_c_exits_130
def run(
    ctx: typer.Context,
    config: Optional[str] = typer.Argument(None, help="Preset name, TOML file, or fio job file (.fio/.job) (default: the embedded 'default' preset)."),
    workload: list[str] = typer.Option([], "--workload", "-w", help="Workload key in fio's vocabulary and units (bs=4kB is 4096 B, as in a job file), e.g. -w bs=4k -w iodepth=32."),
    set_: list[str] = typer.Option([], "--set", "-s", help="Any dotted key, e.g. --set pcie.lanes=8."),
    seed: Optional[int] = typer.Option(None, help="Master random seed (workload.randseed)."),
    json_: bool = typer.Option(False, "--json", help="Print one JSON document instead of tables."),
    device: Optional[str] = typer.Option(None, help="With a job file or fio options: the device preset or TOML file."),
    output_format: str = typer.Option("normal", "--output-format", help="With a job file or fio options: normal, json (fio's JSON layout), json+ (with fio's latency bins) or terse (fio's terse v3)."),
    replay: Optional[str] = typer.Option(None, help="Replay this block trace instead of the synthetic workload (see [workload.replay])."),
    replay_mode: Optional[str] = typer.Option(None, help="With --replay: timed (at trace times) or qd (closed loop at iodepth)."),
    metrics_: bool = typer.Option(False, "--metrics", help="List the metrics this config reports (name, unit, kind, description) instead of running."),
    until_steady: Optional[str] = typer.Option(
        None, "--until-steady", help="Stop at the SNIA PTS steady state of this metric (iops, bandwidth_mib_s, ftl.waf, ...); each --set stats.interval=T is a round."
    ),
    plot_series: Optional[str] = typer.Option(None, "--plot-series", help="Plot the time series (IOPS, p99, WAF, free blocks, GC moves) to a .png or .svg file; needs --set stats.interval=T."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory", help="Refuse a run whose estimated memory exceeds this (e.g. 16GiB; default: half the machine's memory)."),
) -> None:
    """Run a simulation and report throughput, latency and where the time went.

    `--json` adds every metric as a flat `metrics` object, and with `--set stats.interval=10ms`
    a `timeseries`; `--metrics` lists the metric names with their units.

    `--replay TRACE` replays a block trace (any format `ssdlab trace` reads) on the device.
    Also takes a fio job file (`ssdlab run ssd-test.fio --device tlc`), or fio's own command-line
    options (`ssdlab run --rw=randread --bs=4k --iodepth=32`), which replace the device's workload.
    """
    settings = _fio_values(_pairs(workload, "--workload", "workload.")) + _pairs(set_, "--set")
    if plot_series is not None:
        _check_plot(plot_series, "--plot-series")
        if not any(k == "stats.interval" for k, _ in settings):
            raise UsageError("--plot-series needs intervals: --set stats.interval=10ms (for example)")
    if until_steady is not None:
        if not any(k == "stats.interval" for k, _ in settings):
            raise UsageError("--until-steady needs a round: --set stats.interval=10ms (for example)")
        settings += [("stats.steady_metric", json.dumps(until_steady)), ("stats.steady_stop", "true")]
    if replay is not None:
        settings.append(("workload.replay.trace", json.dumps(replay)))
    if replay_mode is not None:
        if replay is None:
            raise UsageError("--replay-mode goes with --replay")
        settings.append(("workload.replay.mode", json.dumps(replay_mode)))
    extra = list(ctx.args)
    if config is not None and config.startswith("--"):  # fio options only: click took the first for CONFIG
        extra.insert(0, config)
        config = None
    is_jobfile = config is not None and config.lower().endswith(JOBFILE_SUFFIXES)
    if extra or is_jobfile:
        if extra and is_jobfile:
            raise UsageError("give a job file or fio options, not both")
        if output_format not in ("normal", "json", "json+", "terse"):
            raise UsageError(f"--output-format {output_format!r}: must be normal, json, json+ or terse")
        if extra and config is not None:
            device = device or config
        name = config if is_jobfile and config is not None else "<command line>"
        _run_jobs(name, extra, device, settings, seed, "json" if json_ and output_format == "normal" else output_format, max_memory)
        return
    if device is not None or output_format != "normal":
        raise UsageError("--device and --output-format go with a fio job file or fio options")
    cfg = api.load_config(config, seed=seed, settings=settings)
    if metrics_:
        _print_metrics(api.metrics(cfg), json_)
        return
    with _Bar("simulating") as bar:
        result = api.run(cfg, progress=bar, max_memory=max_memory)
    if plot_series is not None:
        plot_timeseries(result, plot_series)
    if json_:
        out.file.write(json.dumps(result.summary, indent=2) + "\n")
    else:
        _print_summary(result, settings)


def _print_metrics(frame: Any, as_json: bool) -> None:
    """The metric list: a table, or JSON `[{name, unit, kind, description}]`."""
    rows = frame.reset_index().to_dict(orient="records")
    if as_json:
        out.file.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(title="Metrics (counters count over the measurement window; gauges are states)", title_justify="left")
    for col in ("name", "unit", "kind", "description"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(escape(r["name"]), escape(r["unit"]), r["kind"], escape(r["description"]))
    out.print(table)


def _run_jobs(name: str, args: list[str], device: Optional[str], settings: list, seed: Optional[int], output_format: str, max_memory: Optional[str] = None) -> None:
    from . import fiojob

    text = fiojob.from_args(args) if args else None
    fio_output = output_format != "normal"
    plan = api.load_jobfile(name, device, seed=seed, settings=settings, text=text, fio_percentiles=fio_output)
    if plan.ignored:
        err.print(f"{name}: ignored (no meaning for a simulated device): {', '.join(plan.ignored)}")
    for g in plan.groups:
        for note in g.notes:
            err.print(escape(note))
    with _Bar("simulating") as bar:
        results = plan.run(progress=bar, max_memory=max_memory)
    if output_format in ("json", "json+"):
        out.file.write(json.dumps(api.fio_json(plan, results, plus=output_format == "json+"), indent=2) + "\n")
        return
    if output_format == "terse":
        out.file.write(api.fio_terse(plan, results))
        return
    for gid, result in enumerate(results):
        out.print(f"[bold]group {gid}[/bold]: {', '.join(j['name'] for j in result.summary['jobs'])}")
        _print_summary(result)


@app.command()
@_ctrl_c_exits_130
def atc(
    trace: Optional[str] = typer.Argument(None, help="DMA address trace: text/CSV, raw u64 (.bin/.raw/.u64) or Parquet/Arrow; or `record`."),
    record_config: Optional[str] = typer.Argument(None, metavar="[CONFIG]", help="With `record`: the config whose DMA stream to write (-o FILE)."),
    synth: Optional[str] = typer.Option(None, help="Synthesise a stream instead: linux-direct, linux-buffered or spdk."),
    from_sim: Optional[str] = typer.Option(None, help="Study the DMA stream of this simulated config (preset or file)."),
    ios: int = typer.Option(1_000_000, min=1, help="Synthesised commands."),
    queues: int = typer.Option(8, min=1, help="Synthesised queue pairs (CPUs) of the host."),
    vms: int = typer.Option(1, min=1, help="Synthesised VMs, each its own address space."),
    split: bool = typer.Option(True, help="VMs divide the host's queues, memory and buffer pool (--no-split: each VM is a whole host)."),
    reuse: str = typer.Option("lifo", help="Synthesised buffer reuse: lifo (most recently freed first) or random."),
    bs: str = typer.Option("4k", help="Synthesised I/O size."),
    stu: str = typer.Option("4k,2m", help="STUs, comma separated: sizes (4k, 2m) or ATS exponents (0, 9)."),
    policy: str = typer.Option("lru,fifo,random", help="Eviction policies: lru, fifo (rr), random, plru, opt."),
    assoc: str = typer.Option("full,4", help="Associativities: full, or a number of ways."),
    lines: str = typer.Option("1-4096", help="Cache sizes: LOW-HIGH (powers of two) or a comma list."),
    pin: list[str] = typer.Option([], help="Pinned address range START-END or START+LEN (repeatable)."),
    pin_tagged: bool = typer.Option(False, help="Pin the translations of trace lines whose kind is sq, cq or pin."),
    pin_rings: bool = typer.Option(False, help="Pin the SQ/CQ rings of the synthesised stream."),
    pin_dedicated: bool = typer.Option(False, help="Pinned translations get entries of their own instead of taking lines."),
    skip_bad: bool = typer.Option(False, help="Skip malformed trace lines (and count them) instead of stopping."),
    format_: Optional[str] = typer.Option(None, "--format", help="Trace format: text, raw or parquet (default: by extension)."),
    seed: int = typer.Option(1, help="Seed of the random policy and of synthesis."),
    json_: bool = typer.Option(False, "--json", help="Print the points as JSON."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the points to .csv, .json or .parquet."),
    plot: Optional[str] = typer.Option(None, help="Plot hit rate against lines to a .png or .svg file."),
    write_trace: Optional[str] = typer.Option(None, help="Also write the synthesised stream as a text trace."),
) -> None:
    """ATS/ATC study: hit rate against cache lines per STU, policy, associativity and pinning.

    `ssdlab atc record CONFIG -o FILE` writes the DMA stream of a simulation as a trace instead.
    """
    if trace == "record":
        if not record_config or not output:
            raise UsageError("atc record needs a CONFIG and -o FILE")
        _check_out(output, "-o")
        sim = ats.record(record_config, output)
        out.print(f"wrote {sim.dma_log_len():,} DMA accesses to {output}")
        return
    if record_config is not None:
        raise UsageError(f"unexpected argument {record_config!r} (only `atc record` takes a CONFIG)")
    synth_d = None
    if synth is not None:
        synth_d = {"stack": synth, "ios": ios, "queues": queues, "vms": vms, "split": split, "reuse": reuse, "bs": ats.parse_size(bs, "bs"), "seed": seed}
        if write_trace:
            ats.write_synth(write_trace, synth_d)
    _check_out(output, "-o")
    _check_plot(plot)
    result = ats.study(
        trace, synth=synth_d, from_sim=from_sim, stu=[s for s in stu.split(",") if s.strip()], policies=[p.strip() for p in policy.split(",") if p.strip()],
        assoc=[a.strip() for a in assoc.split(",") if a.strip()], lines=lines, pins=pin, pin_tagged=pin_tagged, pin_rings=pin_rings,
        pin_dedicated=pin_dedicated, skip_bad=skip_bad, fmt=format_, seed=seed,
    )
    if output:
        result.write(output)
    if plot:
        result.plot(plot)
    if json_:
        out.file.write(json.dumps(result.to_json(), indent=2) + "\n")
        return
    _print_atc(result)


def _print_atc(result: ats.AtcResult) -> None:
    df = result.frame
    out.print(f"[bold]ssdlab atc[/bold]  {result.accesses:,} lookups in {result.wall_s:.2f} s" + (f"  ({result.skipped_lines} bad lines skipped)" if result.skipped_lines else ""))
    for stu, d in df.groupby("stu_bytes", sort=True):
        d = d.assign(series=[f"{p} {'full' if s == 1 else str(w) + '-way'}{' pin' if pin else ''}" for p, s, w, pin in zip(d.policy, d.sets, d.ways, d.pinned)])
        table = d.pivot_table(index="lines", columns="series", values="hit_rate")
        t = Table(title=f"Hit rate, STU {ats._human(int(stu))}", title_justify="left")
        t.add_column("lines", justify="right")
        for c in table.columns:
            t.add_column(c, justify="right")
        for lines_, row in table.iterrows():
            t.add_row(str(lines_), *("" if v != v else f"{v:.3f}" for v in row))
        out.print(t)


@app.command()
@_ctrl_c_exits_130
def decompose(
    config: str = typer.Argument("openexpress-fw", help="Preset or TOML file of an NVM-backed device."),
    media: str = typer.Option(",".join(f"{k}={v}" for k, v in SEED001_MEDIA.items()), help="NAME=READ_LATENCY pairs, comma separated."),
    ios: int = typer.Option(2000, min=1, help="QD1 4 KiB reads per medium."),
    json_: bool = typer.Option(False, "--json", help="Print the table as JSON."),
    plot: Optional[str] = typer.Option(None, help="Stacked bars of the shares to a .png or .svg file."),
) -> None:
    """Seed 001's latency decomposition: where a QD1 4 KiB read spends its device time, per medium."""
    pairs = _pairs([m for m in media.split(",") if m.strip()], "--media")
    _check_plot(plot)
    with _Bar("simulating") as bar:
        frame = run_decomposition(config, dict(pairs), ios, progress=bar)
    rows = frame.to_dict(orient="index")
    if json_:
        out.file.write(json.dumps(rows, indent=2) + "\n")
    else:
        t = Table(title=f"Device time of a QD1 4 KiB read, {config} (us, and share)", title_justify="left")
        t.add_column("medium")
        for part in SEED001_PARTS:
            t.add_column(part, justify="right")
        for name, row in rows.items():
            total = sum(row.values()) or 1.0
            t.add_row(str(name), *(f"{v:.3f} ({100 * v / total:.0f}%)" for v in row.values()))
        out.print(t)
    if plot:
        plot_decomposition(frame, plot)


@app.command()
@_ctrl_c_exits_130
def validate(
    devices: Optional[list[str]] = typer.Argument(None, help="Drives of the device library (default: all of them)."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write the tables as Markdown to this file."),
    json_: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Compare each drive of the device library with its published performance figures."""
    from ssdlab import validate as v

    v.figures(devices)  # unknown names fail before any run
    if output is not None and not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise UsageError(f"-o {output}: its directory does not exist")
    with _Bar("validating") as bar:
        rows = v.validate(devices, progress=bar)
    if output is not None:
        cmd = "ssdlab validate" + ("" if not devices else " " + " ".join(devices)) + f" -o {output}"
        with open(output, "w", encoding="utf-8") as f:
            f.write(v.markdown(rows, cmd))
    if json_:
        out.file.write(json.dumps(v.as_records(rows), indent=2) + "\n")
        return
    t = Table(title="Published figures against ssdlab", title_justify="left")
    for c in ("drive", "figure", "published", "ssdlab", "error"):
        t.add_column(c, justify="left" if c in ("drive", "figure") else "right")
    for r in rows:
        unit = v.UNITS[r.figure.metric]
        err_pct = 100 * r.error
        style = "red" if abs(err_pct) > 25 else ""
        t.add_row(
            r.device, escape(r.figure.name), f"{v.num(r.figure.published, r.figure.metric)} {unit}", f"{v.num(r.measured, r.figure.metric)} {unit}",
            f"[{style}]{err_pct:+.0f} %[/{style}]" if style else f"{err_pct:+.0f} %",
        )
    out.print(t)


@app.command()
@_ctrl_c_exits_130
def isolation(
    base: str = typer.Argument("ops-isolation", help="Preset or TOML file of the shared drive."),
    weights: str = typer.Option("1,2,3,4", "--weights", help="The tenants' I/O weights, comma-separated."),
    runtime: str = typer.Option("5s", "--runtime", help="Simulated time of each case."),
    case: Optional[list[str]] = typer.Option(None, "--case", help="Run only these cases (repeatable): clean, aged shared, aged isolated, aged FDP."),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a dotted key in every case (repeatable): key=value."),
    trace: Optional[str] = typer.Option(None, "--trace", help="Every tenant replays this block trace (closed loop at QD32, scaled onto its namespace) instead of 4 KiB random writes."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Write the proportionality figure to this .png or .svg file."),
    json_: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Seed 003's study: tenants with I/O weights on a clean, aged, isolated and FDP drive."""
    from ssdlab import isolation as iso

    try:
        w = [int(x) for x in weights.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--weights {weights!r}: give integers such as 1,2,3,4") from None
    if not w or any(x < 1 or x > 10000 for x in w):
        raise UsageError(f"--weights {weights!r}: give one to many integers between 1 and 10000")
    if plot is not None and os.path.splitext(plot)[1].lower() not in (".png", ".svg"):
        raise UsageError(f"--plot {plot}: the file must end in .png or .svg")
    if trace is not None and not os.path.isfile(trace):
        raise UsageError(f"--trace {trace}: no such file")
    if plot is not None and not os.path.isdir(os.path.dirname(os.path.abspath(plot))):
        raise UsageError(f"--plot {plot}: its directory does not exist")
    known = [c[0] for c in iso.CASES]
    for c in case or []:
        if c not in known:
            raise UsageError(f"--case {c!r}: choose from {', '.join(known)}")
    settings = _pairs(set_ or [], "--set")
    with _Bar("isolation study") as bar:
        workload = None if trace is None else {"iodepth": 32, "replay": {"trace": os.path.abspath(trace), "mode": "qd", "lba": "scale"}}
        df = iso.study(base, w, runtime, workload=workload, settings=settings, cases=case, progress=bar)
    if plot is not None:
        iso.plot(df, plot)
    if json_:
        out.file.write(df.to_json(orient="records", indent=2) + "\n")
        return
    tenants = list(dict.fromkeys(df["tenant"]))
    t = Table(title="Bandwidth relative to the smallest weight (weight ratio in the last row)", title_justify="left")
    for c in ["case", *tenants, "IOPS", "WAF", "own GC"]:
        t.add_column(c, justify="left" if c == "case" else "right")
    for name, g in df.groupby("case", sort=False):
        g = g.set_index("tenant")
        t.add_row(name, *(f"{g.loc[x, 'proportionality']:.2f}" for x in tenants), f"{g['case_iops'].iloc[0]:,.0f}", f"{g['case_waf'].iloc[0]:.2f}", f"{g['gc_own_fraction'].mean():.2f}")
    first = df[df["case"] == df["case"].iloc[0]].set_index("tenant")
    t.add_row("[dim]weight ratio[/dim]", *(f"[dim]{first.loc[x, 'weight_ratio']:.2f}[/dim]" for x in tenants), "", "", "")
    out.print(t)
    out.print(f"  io.cost model: {df['case_model_iops'].iloc[0]:,.0f} write IOPS, measured on the clean drive; own GC: share of the units moved for a tenant's writes that were its own")
    if plot is not None:
        out.print(f"  figure: {plot}")


_VERDICT_STYLE = {"holds": "green", "does not hold": "red", "inconclusive": "yellow"}


def _probe_options(size: str, runtime: str, ramp: str, sustain: Optional[str], destroy_data: bool, keep_file: bool, ios: int) -> dict[str, Any]:
    return {"size": size, "runtime": runtime, "ramp": ramp, "sustain": sustain, "destroy_data": destroy_data, "keep_file": keep_file, "ios": ios}


def _load_or_probe(spec: str, profile: str, experiments: Optional[list[str]], settings: list[tuple[str, str]], opts: dict[str, Any], label: str, repeat: int = 1) -> Any:
    """A saved probe (a .json file written by `ssdlab probe -o`), or a new probe of ``spec``."""
    from ssdlab import probe as pr

    if spec.lower().endswith(".json") and not spec.startswith("fio:"):
        try:
            return pr.Probe.load(spec)
        except OSError as e:
            raise UsageError(f"{spec}: {e.strerror or e}") from None
        except (ValueError, KeyError, TypeError) as e:
            raise UsageError(f"{spec}: not a probe's contract.json ({e})") from None
    target = pr.target_of(spec, settings, **opts)
    with _Bar(label) as bar:
        return pr.run_probe(target, profile, experiments, progress=bar, repeat=repeat)


def _print_contract(p: Any) -> None:
    t = Table(title=f"Unwritten contract of {p.target.get('target')} ({p.target.get('description', '')})", title_justify="left")
    for c in ("#", "rule", "verdict", "measured", "threshold"):
        t.add_column(c, overflow="fold", ratio=4 if c == "measured" else None)
    for i, r in enumerate(p.rules, 1):
        t.add_row(str(i), r["title"], f"[{_VERDICT_STYLE[r['verdict']]}]{r['verdict']}[/]", escape(r["figure"]), escape(r["threshold"]))
    out.print(t)
    il = p.interleave
    if il is not None:
        deg = f"{il['degree']} x 4 KiB" if il.get("degree") else "not found"
        out.print(f"  interleaving degree: {deg} ({il['verdict']}, confidence {il['confidence']:.2f}): {escape(il['reason'])}", highlight=False)
    out.print(f"  measured: {escape(str(p.target.get('method')))}", highlight=False)
    if not p.complete:
        out.print("  [yellow]stopped early[/yellow]: the rules of experiments not finished are inconclusive")


def _write_probe(p: Any, directory: str, fmt: str) -> list[str]:
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


@app.command()
@_ctrl_c_exits_130
def probe(
    target: str = typer.Argument("p4800x", help="A preset or TOML file (simulated), fio:PATH (a real file or block device through fio), or a saved contract.json."),
    against: Optional[str] = typer.Option(None, "--against", help="A second target (same forms): seed 004's heatmap of (L_higher - L_lower) / L_lower and both contracts."),
    profile: str = typer.Option("quick", "--profile", help="quick or full."),
    experiment: Optional[list[str]] = typer.Option(None, "--experiment", "-e", help="Run only these experiments (repeatable): scale, randseq, crowded, mixed, tiny, alignment, sustained, interleave."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Directory for contract.md, contract.json and the plots (created if missing)."),
    fmt: str = typer.Option("png", "--format", help="Plot format: png or svg."),
    set_: list[str] = typer.Option([], "--set", "-s", help="Simulated targets: any dotted key, e.g. --set media.nvm.controllers=5."),
    json_: bool = typer.Option(False, "--json", help="Print the contract (and measurements) as JSON."),
    ios: int = typer.Option(3000, min=100, help="Simulated targets: I/Os per point."),
    repeat: int = typer.Option(1, min=1, max=100, help="Measure each point this many times; a rule's verdict then needs every repeat to agree (for real targets)."),
    size: str = typer.Option("1GiB", help="fio targets: bytes of the file to create (or of the device to use)."),
    runtime: str = typer.Option("1s", help="fio targets: time of each point."),
    ramp: str = typer.Option("200ms", help="fio targets: warm-up before each point's measurement."),
    sustain: Optional[str] = typer.Option(None, help="fio targets: total time of the sustained writes (default 30s quick, 5m full)."),
    destroy_data: bool = typer.Option(False, "--destroy-data", help="fio targets: allow writing over a block device or an existing non-empty file."),
    keep_file: bool = typer.Option(False, "--keep-file", help="fio targets: keep the file the probe created."),
) -> None:
    """Seed 004: derive a drive's unwritten contract (seven rules and its interleaving degree)."""
    from ssdlab import probe as pr

    if profile not in pr.PROFILES:
        raise UsageError(f"--profile {profile!r}: choose quick or full")
    if fmt not in ("png", "svg"):
        raise UsageError(f"--format {fmt!r}: choose png or svg")
    for e in experiment or []:
        if e not in pr.EXPERIMENTS:
            raise UsageError(f"--experiment {e!r}: choose from {', '.join(pr.EXPERIMENTS)}")
    if output is not None and os.path.exists(output) and not os.path.isdir(output):
        raise UsageError(f"--output {output}: exists and is not a directory")
    settings = _pairs(set_, "--set")
    opts = _probe_options(size, runtime, ramp, sustain, destroy_data, keep_file, ios)
    a = _load_or_probe(target, profile, experiment, settings, opts, f"probe {target}", repeat)
    b = None
    if against is not None and a.complete:
        b = _load_or_probe(against, profile, experiment, settings, opts, f"probe {against}", repeat)
    written: list[str] = []
    if output is not None:
        if b is None:
            written = _write_probe(a, output, fmt)
        else:
            for p in (a, b):
                written += _write_probe(p, os.path.join(output, _slug(str(p.target.get("target")))), fmt)
    if b is not None and "scale" in a.data and "scale" in b.data:
        if output is not None:
            vmd = os.path.join(output, "versus.md")
            with open(vmd, "w", encoding="utf-8") as f:
                f.write(pr.versus_markdown(a, b))
            vpng = os.path.join(output, f"versus.{fmt}")
            pr.plot_versus(a, b).savefig(vpng, dpi=130)
            written += [vmd, vpng]
    if json_:
        doc: dict[str, Any] = a.to_dict()
        if b is not None:
            doc = {"a": doc, "b": b.to_dict()}
            if "scale" in a.data and "scale" in b.data:
                doc["versus"] = json.loads(pr.versus(a, b).to_json(orient="index"))
        out.file.write(json.dumps(doc, indent=1) + "\n")
    else:
        _print_contract(a)
        if b is not None:
            _print_contract(b)
            if "scale" in a.data and "scale" in b.data:
                v = pr.versus(a, b).sort_index(ascending=False)
                t = Table(title=f"(L_higher - L_lower) / L_lower of random reads; > 0 where {a.target.get('target')} is faster", title_justify="left")
                t.add_column("size \\ QD")
                for c in v.columns:
                    t.add_column(str(int(c)), justify="right")
                for size_kib, row in v.iterrows():
                    t.add_row(f"{int(size_kib)} KiB", *(f"[{'blue' if x > 0 else 'red'}]{x:+.2f}[/]" for x in row))
                out.print(t)
        for w in written:
            out.print(f"  wrote {w}", highlight=False)
    failed = next((p.error for p in (a, b) if p is not None and p.error), None)
    if failed:
        err.print(f"[bold red]error:[/bold red] {escape(failed)}; kept the finished experiments{' in ' + output if output else ''}", highlight=False)
        sys.exit(2)
    if not a.complete or (b is not None and not b.complete) or (against is not None and b is None):
        err.print(f"interrupted: kept the finished experiments{' in ' + output if output else ''}")
        sys.exit(130)


@app.command()
@_ctrl_c_exits_130
def calibrate(
    target: str = typer.Argument(..., help="fio:PATH (a real drive through fio), a simulated device, or a saved contract.json with the quick battery."),
    output: str = typer.Option(..., "--output", "-o", help="The device TOML to write."),
    base: str = typer.Option("p4800x", "--base", help="The NVM-array device the fit extends."),
    set_: list[str] = typer.Option([], "--set", "-s", help="Dotted keys applied to the base (and to a simulated target)."),
    json_: bool = typer.Option(False, "--json", help="Print the fit report as JSON."),
    size: str = typer.Option("1GiB", help="fio targets: bytes of the file to create."),
    runtime: str = typer.Option("1s", help="fio targets: time of each point."),
    ramp: str = typer.Option("200ms", help="fio targets: warm-up before each point."),
    destroy_data: bool = typer.Option(False, "--destroy-data", help="fio targets: allow writing over a block device or a non-empty file."),
) -> None:
    """Fit a simulated device to a drive's probe and write it as TOML, with the fit cell by cell."""
    from ssdlab import calibrate as cal_mod

    if not output.lower().endswith(".toml"):
        raise UsageError(f"--output {output}: write a .toml file")
    if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise UsageError(f"--output {output}: its directory does not exist")
    settings = _pairs(set_, "--set")
    opts = _probe_options(size, runtime, ramp, None, destroy_data, False, 3000)
    source = _load_or_probe(target, "quick", ["scale", "randseq", "mixed", "interleave"], settings, opts, f"probe {target}")
    if source.error:
        err.print(f"[bold red]error:[/bold red] {escape(source.error)}; nothing written", highlight=False)
        sys.exit(2)
    if not source.complete:
        err.print("interrupted: the probe did not finish; nothing written")
        sys.exit(130)
    with _Bar("calibrate") as bar:
        cal = cal_mod.calibrate(source, base, settings, progress=bar)
    with open(output, "w", encoding="utf-8") as f:
        f.write(cal.toml())
    if json_:
        out.file.write(json.dumps({"settings": cal.settings, "figures": cal.figures, "steps": cal.steps, "fit": json.loads(cal.fit.to_json(orient="records"))}, indent=1) + "\n")
        return
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


@app.command()
@_ctrl_c_exits_130
def sweep(
    spec: str = typer.Argument(..., help="The sweep spec (TOML): base, kind, mode, repeats, seed, [set], [axes]."),
    store: Optional[str] = typer.Option(None, "--store", "-o", help="The results store (a directory; default: SPEC without .toml, plus .store)."),
    executor: str = typer.Option("local", "--executor", "-x", help="local (a process pool), serial, dask-local (a LocalCluster on 127.0.0.1), or dask://HOST:PORT."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", min=1, max=4096, help="Local and dask-local workers (default: every core)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the points and what the store already holds; run nothing."),
    json_: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Run a parameter study into a resumable store: points already stored are skipped."""
    from ssdlab import lab as sw

    if not os.path.isfile(spec):
        raise UsageError(f"{spec}: no such file")
    store = store or os.path.splitext(spec)[0] + ".store"
    s, todo, have = sw.plan(spec, store)
    left = [t for t in todo if t.point_id not in have]
    if dry_run:
        out.print(f"{len(todo)} points ({len(s.combinations())} combinations x {s.repeats} repeats); {len(todo) - len(left)} in {store}, {len(left)} to run", highlight=False)
        return
    start = time.monotonic()
    with _Bar(f"sweep {s.name}") as bar:
        df = sw.sweep(spec, store, executor, workers, progress=bar)
    took = time.monotonic() - start
    if json_:
        out.file.write(df.to_json(orient="records", indent=1) + "\n")
        return
    out.print(f"{len(todo)} points: {len(left)} run, {len(todo) - len(left)} already in {store}; {took:.1f} s ({len(left) / took if took > 0 else 0:.1f} points/s)", highlight=False)
    shown = [c for c in (*s.axes, "repeat", "iops", "bandwidth_mib_s", "read.latency_us.mean", "write.latency_us.mean") if c in df.columns]
    shown += [c for c in df.columns if c.startswith("rule.") and c.endswith(".verdict")]
    t = Table(title=f"{s.name}: {len(df)} rows (every metric is in the store: ssdlab.open_store)", title_justify="left")
    for c in shown:
        t.add_column(c, justify="right")
    for _, row in df.head(40).iterrows():
        t.add_row(*(f"{row[c]:,.2f}" if isinstance(row[c], float) else str(row[c]) for c in shown))
    out.print(t)
    if len(df) > 40:
        out.print(f"  ... {len(df) - 40} more rows", highlight=False)


@app.command()
@_ctrl_c_exits_130
def report(
    source: str = typer.Argument(..., help="A sweep store (directory) or a run's JSON (ssdlab run --json > run.json)."),
    output: str = typer.Option(..., "--output", "-o", help="The HTML file to write (its figures go to OUTPUT-figures/ as SVG and PNG)."),
    no_figures: bool = typer.Option(False, "--no-figures", help="Write only the HTML."),
) -> None:
    """A self-contained HTML report (inline SVG, no external assets) of a sweep or a run."""
    from ssdlab import report as rep

    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"--output {output}: write an .html file")
    if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise UsageError(f"--output {output}: its directory does not exist")
    if not os.path.exists(source):
        raise UsageError(f"{source}: no such file or directory")
    written = rep.report(source, output, figures=not no_figures)
    out.print(f"wrote {output}" + (f" and {len(written) - 1} figure files in {os.path.splitext(output)[0]}-figures/" if len(written) > 1 else ""), highlight=False)


@app.command()
@_ctrl_c_exits_130
def reproduce(
    study: str = typer.Argument(..., help="atc (seed 000), openexpress (001), moneta (002), ops-isolation (003), optane-contract (004), or all."),
    output: str = typer.Option("reproduce", "--output", "-o", help="Directory for the stores, the HTML reports and figures.csv."),
    profile: str = typer.Option("quick", "--profile", help="quick or full."),
    executor: str = typer.Option("local", "--executor", "-x", help="local, serial, dask-local or dask://HOST:PORT."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", min=1, max=4096, help="Local workers (default: every core)."),
    json_: bool = typer.Option(False, "--json", help="Print the table as JSON."),
) -> None:
    """Run a seed study and set each published figure beside ours."""
    from ssdlab import reproduce as rp

    if profile not in ("quick", "full"):
        raise UsageError(f"--profile {profile!r}: quick or full")
    if study != "all" and study not in rp.STUDIES:
        raise UsageError(f"study {study!r}: one of {', '.join([*rp.STUDIES, 'all'])}")
    start = time.monotonic()
    with _Bar(f"reproduce {study}") as bar:
        table = rp.reproduce(study, output, profile, executor, workers, progress=bar)
    if json_:
        out.file.write(table.to_json(orient="records", indent=1) + "\n")
        return
    t = Table(title=f"Published figures beside ssdlab's ({time.monotonic() - start:.0f} s)", title_justify="left")
    for c in ("study", "figure", "published", "ours", "error", "verdict", "where"):
        t.add_column(c, justify="right" if c in ("ours", "error") else "left", overflow="fold")
    style = {"matches": "green", "holds": "green", "direction": "yellow", "miss": "red", "not measured": "red"}
    for _, r in table.iterrows():
        err = "" if r["error_pct"] is None or r["error_pct"] != r["error_pct"] else f"{r['error_pct']:+.0f} %"
        ours = "" if r["ours"] is None or r["ours"] != r["ours"] else f"{r['ours']:.3g}"
        t.add_row(r["study"], escape(r["figure"]), escape(r["published"]), ours, err, f"[{style.get(r['verdict'], 'white')}]{r['verdict']}[/]", r["where"])
    out.print(t)
    out.print(f"  quotes, stores and reports in {output}/ (figures.csv, *.html)", highlight=False)


@app.command()
@_ctrl_c_exits_130
def presets() -> None:
    """List the preset library."""
    t = Table(title="Presets (use a name as CONFIG, or `extends = \"NAME\"` in a file)", title_justify="left")
    t.add_column("name", style="bold")
    t.add_column("description")
    for name, desc in _core.presets_list():
        t.add_row(name, desc)
    out.print(t)


@config_app.command("show")
@_ctrl_c_exits_130
def config_show(
    name: str = typer.Argument(..., help="Preset name or TOML file."),
    set_: list[str] = typer.Option([], "--set", "-s", help="Any dotted key, e.g. --set pcie.lanes=8."),
) -> None:
    """Print the fully resolved config (every preset and override applied) as TOML."""
    cfg = api.load_config(name, settings=_pairs(set_, "--set"))
    out.file.write(f"# {cfg.description}\n# config hash {cfg.hash}\n{cfg.toml}")


@app.command()
@_ctrl_c_exits_130
def bench(
    json_: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    scale: float = typer.Option(1.0, min=0.001, max=100.0, help="Scale the I/O count of every scenario."),
) -> None:
    """Measure simulation speed: simulated I/Os per wall-clock second on fixed scenarios."""
    rows = []
    names = _core.bench_scenarios()
    with _Bar("benchmarking") as bar:
        for i, name in enumerate(names):
            rows.append(json.loads(_core.bench_run(name, scale)))
            bar(float(i + 1) / len(names))
    if json_:
        out.file.write(json.dumps({"scenarios": rows}, indent=2) + "\n")
        return
    t = Table(
        title="ssdlab bench (one core; wall s times the run, precondition s the set-up; atc-* count addresses, trace-* lines)",
        title_justify="left",
    )
    for col in ("scenario", "I/Os", "events", "wall s", "sim I/Os per s", "precondition s"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(
            r["name"], f"{r['ios']:,}", f"{r['events']:,}", f"{r['wall_s']:.3f}", f"{r['sim_ios_per_sec']:,.0f}", f"{r['precondition_s']:.2f}"
        )
    out.print(t)


class _Count(_Progress):
    """A running count of records for passes of unknown length: ``count(records)``."""

    def columns(self) -> tuple[Any, ...]:
        return (TextColumn("{task.completed:,.0f} records"),)

    def __call__(self, records: int) -> None:
        self.update(records)


FORMAT_HELP = "Trace format (default: detected): msr, spc, fiu, alibaba, tencent, blkparse, fio-v2, fio-v3, mqsim, disksim."


@trace_app.command("stats")
@_ctrl_c_exits_130
def trace_stats(
    path: str = typer.Argument(..., help="Trace file (plain, .gz or .bz2)."),
    format_: Optional[str] = typer.Option(None, "--format", help=FORMAT_HELP),
    lenient: bool = typer.Option(False, help="Skip malformed lines and count them instead of stopping at the first."),
    blk_action: str = typer.Option("D", help="blkparse: the action whose events are I/Os (D issue, Q queue)."),
    devices: int = typer.Option(10, min=0, help="Devices to list, busiest first."),
    json_: bool = typer.Option(False, "--json", help="Print the statistics as JSON."),
) -> None:
    """One pass over a trace: size histogram, read ratio, footprint, inter-arrival, sequentiality, per device."""
    from . import trace as tr

    t0 = time.monotonic()
    with _Count("reading") as count:
        s = tr.stats(path, format_, strict=not lenient, blk_action=blk_action, devices=devices, progress=count)
    s["wall_s"] = time.monotonic() - t0
    if json_:
        out.file.write(json.dumps(s, indent=2) + "\n")
        return
    gib = 1024**3
    out.print(f"[bold]{path}[/bold]  ({s['format']})  {s['lines']:,} lines, {s['ios']:,} I/Os in {s['wall_s']:.2f} s wall")
    t = Table(show_header=False, box=None)
    rows = [
        ("reads / writes / trims / flushes", f"{s['reads']:,} / {s['writes']:,} / {s['trims']:,} / {s['flushes']:,}  (read ratio {s['read_ratio']:.3f})"),
        ("bytes read / written", f"{s['bytes_read'] / gib:,.3f} / {s['bytes_written'] / gib:,.3f} GiB  (mean size {s['mean_size'] / 1024:,.1f} KiB)"),
        ("footprint", f"{s['footprint_bytes'] / gib:,.3f} GiB in 4 KiB pages"),
        ("sequential", f"{s['sequential_ratio']:.3f} of requests start where their device's previous one ended"),
        ("span", f"{s['duration_s']:,.3f} s of trace time, {s['iops']:,.0f} IOPS"),
        ("inter-arrival (us)", "mean {mean:,.2f}  p50 {p50:,.2f}  p90 {p90:,.2f}  p99 {p99:,.2f}  max {max:,.2f}".format(**s["interarrival_us"])),
        ("out of order", f"{s['out_of_order']:,} records earlier than the one before"),
        ("skipped", f"{s['bad_lines']:,} malformed lines, {s['zero_length']:,} zero-length requests" + (f"; first: {s['first_bad']}" if s["first_bad"] else "")),
    ]
    for k, v in rows:
        t.add_row(k, v)
    out.print(t)
    h = Table(title="Request sizes", title_justify="left")
    h.add_column("up to", justify="right")
    h.add_column("requests", justify="right")
    h.add_column("%", justify="right")
    for b in s["size_histogram"]:
        h.add_row(_size(b["le_bytes"]), f"{b['count']:,}", f"{100 * b['count'] / max(s['ios'], 1):.1f}")
    out.print(h)
    if s["per_device"]:
        d = Table(title=f"Devices ({s['devices']:,} in all; busiest first)", title_justify="left")
        for c in ("device", "I/Os", "read ratio", "GiB", "footprint GiB", "highest byte"):
            d.add_column(c, justify="right")
        for x in s["per_device"]:
            d.add_row(x["name"] or str(x["id"]), f"{x['ios']:,}", f"{x['read_ratio']:.3f}", f"{x['bytes'] / gib:,.3f}", f"{x['footprint_bytes'] / gib:,.3f}", _size(x["max_offset"]))
        out.print(d)


def _size(n: int) -> str:
    """Bytes in the largest IEC unit below them, to 4 significant digits."""
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if x < 1024:
            return f"{x:g} {unit}" if unit == "B" else f"{x:,.4g} {unit}"
        x /= 1024
    return f"{x:,.4g} PiB"


@trace_app.command("convert")
@_ctrl_c_exits_130
def trace_convert(
    path: str = typer.Argument(..., help="Trace file (plain, .gz or .bz2)."),
    output: str = typer.Option(..., "--output", "-o", help="Parquet file to write."),
    format_: Optional[str] = typer.Option(None, "--format", help=FORMAT_HELP),
    lenient: bool = typer.Option(False, help="Skip malformed lines and count them instead of stopping at the first."),
    blk_action: str = typer.Option("D", help="blkparse: the action whose events are I/Os (D issue, Q queue)."),
) -> None:
    """Convert a trace to ssdlab's canonical Parquet (time_ns, op, offset, len, dev)."""
    from . import trace as tr

    if not output.lower().endswith(".parquet"):
        raise UsageError(f"-o {output!r}: write a .parquet file")
    _check_out(output, "-o")
    with _Count("converting") as count:
        meta = tr.convert(path, output, format_, strict=not lenient, blk_action=blk_action, progress=count)
    c = meta["counts"]
    out.print(f"wrote {meta['records']:,} records ({meta['format']}) to {output}; {c['bad_lines']:,} malformed lines skipped, {c['zero_length']:,} zero-length requests dropped")


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: runs the app and turns every user error into exit code 2."""
    debug = os.environ.get("SSDLAB_DEBUG") == "1"
    try:
        # Standalone mode: the framework reports usage errors itself and exits with code 2.
        app(args=argv, prog_name="ssdlab")
    except SsdlabError as e:
        found = issues(e)
        if found:
            err.print(f"[bold red]error:[/bold red] invalid configuration ({len(found)} problem{'s' if len(found) != 1 else ''}):", highlight=False)
            for i in found:
                where = f"{i['path']} = {i['value']}" if i["value"] else i["path"]
                err.print(f"  - {where}: {i['rule']}", highlight=False, markup=False)
        else:
            err.print(f"[bold red]error:[/bold red] {escape(str(e.args[0] if e.args else e))}", highlight=False)
        if debug:
            raise
        sys.exit(2)
    except UsageError as e:
        err.print(f"[bold red]error:[/bold red] {escape(str(e))}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        _exit_interrupted()
    except Exception as e:
        if debug:
            raise
        err.print(f"[bold red]internal error:[/bold red] {type(e).__name__}: {escape(str(e))} (set SSDLAB_DEBUG=1 for a traceback; please report it)", highlight=False)
        sys.exit(1)
