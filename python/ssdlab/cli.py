"""The ``ssdlab`` command line: the commands, their options and checks of them.

Every user error (bad config, bad option, unreadable file) prints a message naming what is
wrong and exits with code 2, and Ctrl-C prints "interrupted" and exits with 130; no traceback is
shown (set ``SSDLAB_DEBUG=1`` to see one). Each command's work (its study, its tables) is in the
study's own module; what the commands share is in :mod:`ssdlab.cliutil`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Optional

import typer

from ssdlab import _core, api, ats
from ssdlab.cliutil import FORCE_HELP, Bar, Count, UsageError, check_out, check_out_dir, check_plot, ctrl_c_exits_130, err, escape, exit_interrupted, fio_values, out, pairs
from ssdlab.decompose import SEED001_MEDIA, decompose as run_decomposition, plot_decomposition, print_table as print_decomposition
from ssdlab.exceptions import SsdlabError, issues
from ssdlab.names import names
from ssdlab.series import plot_timeseries

# Help texts are plain text: rich markup would eat the TOML tables they name ([set], [axes]).
app = typer.Typer(
    add_completion=True,
    pretty_exceptions_enable=False,
    no_args_is_help=False,
    rich_markup_mode=None,
    help="ssdlab: a laboratory for NVMe SSD architecture.",
)


def _version(value: bool) -> None:
    if value:
        out.print(f"ssdlab {_core.__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit.")) -> None:
    """ssdlab: a laboratory for NVMe SSD architecture."""
config_app = typer.Typer(help="Inspect configurations.", no_args_is_help=True)
app.add_typer(config_app, name="config")
trace_app = typer.Typer(help="Block I/O traces: statistics and conversion.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")

JOBFILE_SUFFIXES = (".fio", ".job", ".ini")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@ctrl_c_exits_130
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
    max_memory: Optional[str] = typer.Option(None, "--max-memory", help="Refuse a run whose estimated memory exceeds this (e.g. 16GiB; default: half of RAM, or less under ulimit -v or a cgroup)."),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Run a simulation and report throughput, latency and where the time went.

    `--json` adds every metric as a flat `metrics` object, and with `--set stats.interval=10ms`
    a `timeseries`; `--metrics` lists the metric names with their units.

    `--replay TRACE` replays a block trace (any format `ssdlab trace` reads) on the device.
    Also takes a fio job file (`ssdlab run ssd-test.fio --device tlc`), or fio's own command-line
    options (`ssdlab run --rw=randread --bs=4k --iodepth=32`), which replace the device's workload.
    """
    settings = fio_values(pairs(workload, "--workload", "workload.")) + pairs(set_, "--set")
    if plot_series is not None:
        check_plot(plot_series, "--plot-series", force)
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
        from ssdlab import summary  # the tables' module; a config's run with --json needs none of it

        summary.run_jobs(name, extra, device, settings, seed, "json" if json_ and output_format == "normal" else output_format, max_memory)
        return
    if device is not None or output_format != "normal":
        raise UsageError("--device and --output-format go with a fio job file or fio options")
    cfg = api.load_config(config, seed=seed, settings=settings)
    if metrics_:
        from ssdlab import summary

        summary.print_metrics(out, api.metrics(cfg), json_)
        return
    with Bar("simulating") as bar:
        result = api.run(cfg, progress=bar, max_memory=max_memory)
    if plot_series is not None:
        plot_timeseries(result, plot_series)
    if json_:
        # With the config (its base, the keys set, the TOML), so a report can name the run.
        out.file.write(json.dumps({**result.summary, "config": api.config_record(config, cfg)}, indent=2) + "\n")
    else:
        from ssdlab import summary

        summary.print_result(out, result, settings)


@app.command(name="serve")
def serve_cmd(
    config: Optional[str] = typer.Argument(None, help="Preset name or TOML file (default: the embedded 'default' preset)."),
    set_: list[str] = typer.Option([], "--set", "-s", help="Any dotted key, e.g. --set ftl.write_buffer=16MiB."),
    seed: Optional[int] = typer.Option(None, help="Master random seed (workload.randseed)."),
    port: int = typer.Option(10809, "--port", "-p", help="TCP port on 127.0.0.1 (NBD's own is 10809)."),
    unix: Optional[str] = typer.Option(None, "--unix", "-U", help="Serve on this Unix socket instead of TCP."),
    time_scale: float = typer.Option(1.0, "--time-scale", help="Simulated time runs K times slower than wall time (use when the simulation cannot keep up); latencies are reported in simulated time."),
    queues: int = typer.Option(4, "--queues", help="NVMe queue pairs (jobs); NBD connections take them round robin. With [[tenants]] each tenant keeps its own numjobs."),
    once: bool = typer.Option(False, "--once", help="Stop when the last client disconnects."),
    store_memory: str = typer.Option("1GiB", "--store-memory", help="Data kept in memory before the store spills to a file."),
    spill_dir: Optional[str] = typer.Option(None, "--spill-dir", help="Directory of the spill file (default: a temporary one)."),
    integrity: bool = typer.Option(False, "--integrity", help="Check every read: the FTL's shadow map (ftl.integrity) and a checksum of every stored chunk."),
    json_: bool = typer.Option(False, "--json", help="At the end, print one JSON document (the run's summary plus an `emulation` object) instead of tables."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory", help="Refuse a drive whose estimated memory exceeds this (default: half of RAM)."),
) -> None:
    """Serve the simulated drive over NBD, in real time, to real software.

    Clients: fio (`ioengine=nbd`, `uri=nbd://127.0.0.1:10809`), qemu (`-drive
    file=nbd://127.0.0.1:10809,format=raw`), nbdsh/nbdcopy, or the kernel's nbd-client. A request
    enters the simulation when it arrives and is answered when the wall clock reaches its
    simulated completion; the real host replaces the simulated host stack. Ctrl-C (or the last
    client leaving, with --once) stops the server and prints the same summary as `ssdlab run`,
    with the emulation's lag percentiles. Needs nbdkit and nbdkit-plugin-python.
    """
    from ssdlab import emulate, summary

    settings = pairs(set_, "--set")
    try:
        try:
            memory = int(_core.parse_size(store_memory))
        except ValueError as e:
            raise UsageError(f"--store-memory {store_memory!r}: {e}") from None
        cfg = emulate.load(config, settings, seed, queues, integrity)
        if unix is None and not 1 <= port <= 65535:
            raise UsageError(f"--port {port}: must be between 1 and 65535")
        if spill_dir is not None and not os.path.isdir(spill_dir):
            raise UsageError(f"--spill-dir {spill_dir!r}: not a directory")
        del max_memory  # the plugin builds the drive under the core's default limit

        def ready(s: emulate.Serving) -> None:
            names = ", ".join(repr(e) for e in s.exports)
            err.print(f"serving {escape(cfg.description)} at {s.uri} (exports: {escape(names)}); Ctrl-C stops", highlight=False)

        last = {"t": 0.0, "end": 0.0}

        def status(st: dict[str, Any]) -> None:
            if json_:
                return
            # The time series' intervals that saw I/O, every 5 s (--set stats.interval=T) ...
            for r in st.get("intervals", []):
                if r["end_s"] > last["end"]:
                    last["end"] = r["end_s"]
                    if r["ios"] == 0:
                        continue
                    err.print(f"  [{r['start_s']:.3f}-{r['end_s']:.3f} s]  {r['ios']:,} I/Os  {r['iops']:,.0f} IOPS  mean {r['lat_mean_us']:,.1f} us  p99 {r['lat_p99_us']:,.1f} us", highlight=False)
            # ... and every 5 s the requests served and the lag.
            if time.monotonic() - last["t"] < 5.0:
                return
            last["t"] = time.monotonic()
            n = sum(st["requests"])
            lag = st["lag_ns"]
            err.print(f"  {n:,} requests  simulated {st['simulated_s']:.3f} s  lag p50 {lag[0] / 1e3:.1f} us  p99 {lag[2] / 1e3:.1f} us  max {lag[4] / 1e3:.1f} us", highlight=False)

        result = emulate.serve(cfg, port=port, unix=unix, time_scale=time_scale, once=once, store_memory=memory, spill_dir=spill_dir, integrity=integrity, on_ready=ready, on_status=status)
    except emulate.ServeError as e:
        raise UsageError(str(e)) from None
    summary.print_served(out, result, cfg.description, settings, json_)


@app.command()
@ctrl_c_exits_130
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
    policy: str = typer.Option("lru,fifo,random", help=f"Eviction policies: {', '.join(names('atc_policy'))} (fifo also as rr)."),
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
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """ATS/ATC study: hit rate against cache lines per STU, policy, associativity and pinning.

    `ssdlab atc record CONFIG -o FILE` writes the DMA stream of a simulation as a trace instead.
    """
    ats.command(
        out, trace, record_config, synth, {"ios": ios, "queues": queues, "vms": vms, "split": split, "reuse": reuse}, bs, write_trace, output, plot, json_,
        stu, policy, assoc, from_sim=from_sim, lines=lines, pins=pin, pin_tagged=pin_tagged, pin_rings=pin_rings, pin_dedicated=pin_dedicated, skip_bad=skip_bad,
        fmt=format_, seed=seed, force=force,
    )


@app.command()
@ctrl_c_exits_130
def decompose(
    config: str = typer.Argument("openexpress-fw", help="Preset or TOML file of an NVM-backed device."),
    media: str = typer.Option(",".join(f"{k}={v}" for k, v in SEED001_MEDIA.items()), help="NAME=READ_LATENCY pairs, comma separated."),
    ios: int = typer.Option(2000, min=1, help="QD1 4 KiB reads per medium."),
    json_: bool = typer.Option(False, "--json", help="Print the table as JSON."),
    plot: Optional[str] = typer.Option(None, help="Stacked bars of the shares to a .png or .svg file."),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Seed 001's latency decomposition: where a QD1 4 KiB read spends its device time, per medium."""
    media_pairs = pairs([m for m in media.split(",") if m.strip()], "--media")
    check_plot(plot, force=force)
    with Bar("simulating") as bar:
        frame = run_decomposition(config, dict(media_pairs), ios, progress=bar)
    if json_:
        out.file.write(json.dumps(frame.to_dict(orient="index"), indent=2) + "\n")
    else:
        print_decomposition(out, frame, config)
    if plot:
        plot_decomposition(frame, plot)


@app.command()
@ctrl_c_exits_130
def validate(
    devices: Optional[list[str]] = typer.Argument(None, help="Drives of the device library (default: all of them)."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write the tables as Markdown to this file."),
    json_: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
    fit: bool = typer.Option(False, "--fit", help="Fit the drives' calibrated unknowns on their training figures and print them as preset lines."),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Compare each drive of the device library with its published performance figures."""
    from ssdlab import validate as v

    v.figures(devices)  # unknown names fail before any run
    if fit:
        from ssdlab import fit as fitting

        for d in devices or list(v.CALIBRATED):
            with Bar(f"fitting {d}") as bar:
                fitted = fitting.fit(d, progress=bar)
            out.file.write(fitting.as_toml(d, fitted) + "\n")
        return
    check_out(output, "-o", force)
    with Bar("validating") as bar:
        rows = v.validate(devices, progress=bar)
    if output is not None:
        v.write_markdown(output, rows, devices)
    if json_:
        out.file.write(json.dumps(v.as_records(rows), indent=2) + "\n")
        return
    v.print_table(out, rows)


@app.command()
@ctrl_c_exits_130
def isolation(
    base: str = typer.Argument("ops-isolation", help="Preset or TOML file of the shared drive."),
    weights: str = typer.Option("1,2,3,4", "--weights", help="The tenants' I/O weights, comma-separated."),
    runtime: str = typer.Option("5s", "--runtime", help="Simulated time of each case."),
    case: Optional[list[str]] = typer.Option(None, "--case", help="Run only these cases (repeatable): clean, aged shared, aged isolated, aged FDP."),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a dotted key in every case (repeatable): key=value."),
    trace: Optional[str] = typer.Option(None, "--trace", help="Every tenant replays this block trace (closed loop at QD32, scaled onto its namespace) instead of 4 KiB random writes."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Write the proportionality figure to this .png or .svg file."),
    json_: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Seed 003's study: tenants with I/O weights on a clean, aged, isolated and FDP drive."""
    from ssdlab import isolation as iso

    iso.command(out, base, weights, runtime, case, pairs(set_ or [], "--set"), trace, plot, json_, force)


@app.command()
@ctrl_c_exits_130
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
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
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
    check_out_dir(output, "--output", ("contract.md", "contract.json", "versus.md"), force)
    settings = pairs(set_, "--set")
    opts = {"size": size, "runtime": runtime, "ramp": ramp, "sustain": sustain, "destroy_data": destroy_data, "keep_file": keep_file, "ios": ios}
    a = pr.load_or_probe(target, profile, experiment, settings, opts, f"probe {target}", repeat)
    b = None if against is None else lambda: pr.load_or_probe(against, profile, experiment, settings, opts, f"probe {against}", repeat)
    code = pr.command(out, err, a, b, output, fmt, json_)
    if code:
        sys.exit(code)


@app.command()
@ctrl_c_exits_130
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
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Fit a simulated device to a drive's probe and write it as TOML, with the fit cell by cell."""
    from ssdlab import calibrate as cal, probe as pr

    if not output.lower().endswith(".toml"):
        raise UsageError(f"--output {output}: write a .toml file")
    check_out(output, "--output", force)
    settings = pairs(set_, "--set")
    opts = {"size": size, "runtime": runtime, "ramp": ramp, "sustain": None, "destroy_data": destroy_data, "keep_file": False, "ios": 3000}
    source = pr.load_or_probe(target, "quick", ["scale", "randseq", "mixed", "interleave"], settings, opts, f"probe {target}")
    code = cal.command(out, err, source, base, settings, output, json_)
    if code:
        sys.exit(code)


@app.command()
@ctrl_c_exits_130
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

    sw.command(out, spec, store, executor, workers, dry_run, json_)


@app.command()
@ctrl_c_exits_130
def report(
    source: str = typer.Argument(..., help="A sweep store (directory) or a run's JSON (ssdlab run --json > run.json)."),
    output: str = typer.Option(..., "--output", "-o", help="The HTML file to write (its figures go to OUTPUT-figures/ as SVG and PNG)."),
    no_figures: bool = typer.Option(False, "--no-figures", help="Write only the HTML."),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """A self-contained HTML report (inline SVG, no external assets) of a sweep or a run."""
    from ssdlab import report as rep

    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"--output {output}: write an .html file")
    check_out(output, "--output", force)
    if not os.path.exists(source):
        raise UsageError(f"{source}: no such file or directory")
    written = rep.report(source, output, figures=not no_figures)
    out.print(f"wrote {output}" + (f" and {len(written) - 1} figure files in {os.path.splitext(output)[0]}-figures/" if len(written) > 1 else ""), highlight=False)


@app.command()
@ctrl_c_exits_130
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
    # A directory of an earlier run resumes its stores; its tables and pages are replaced (said).
    earlier = os.path.exists(os.path.join(output, "figures.csv"))
    with Bar(f"reproduce {study}") as bar:
        table = rp.reproduce(study, output, profile, executor, workers, progress=bar)
    if earlier:
        err.print(f"replaced figures.csv and the study pages of an earlier run in {output}/ (its stores resumed: points already there were not run again)", highlight=False)
    if json_:
        out.file.write(table.to_json(orient="records", indent=1) + "\n")
        return
    rp.print_table(out, table, time.monotonic() - start, output)


@app.command()
@ctrl_c_exits_130
def presets() -> None:
    """List the preset library."""
    from rich.table import Table

    t = Table(title="Presets (use a name as CONFIG, or `extends = \"NAME\"` in a file)", title_justify="left")
    t.add_column("name", style="bold")
    t.add_column("description")
    for name, desc in _core.presets_list():
        t.add_row(name, desc)
    out.print(t)


@config_app.command("show")
@ctrl_c_exits_130
def config_show(
    name: str = typer.Argument(..., help="Preset name or TOML file."),
    set_: list[str] = typer.Option([], "--set", "-s", help="Any dotted key, e.g. --set pcie.lanes=8."),
) -> None:
    """Print the fully resolved config (every preset and override applied) as TOML."""
    cfg = api.load_config(name, settings=pairs(set_, "--set"))
    out.file.write(f"# {cfg.description}\n# config hash {cfg.hash}\n{cfg.toml}")


@app.command()
@ctrl_c_exits_130
def bench(
    json_: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    scale: float = typer.Option(1.0, min=0.001, max=100.0, help="Scale the I/O count of every scenario."),
    only: list[str] = typer.Option([], "--only", help="Run only this scenario (repeatable; --list names them)."),
    list_: bool = typer.Option(False, "--list", help="List the scenarios and exit."),
    rounds: int = typer.Option(1, min=1, max=100, help="Run the set this many times and report each scenario's median run and spread."),
) -> None:
    """Measure simulation speed: simulated I/Os per wall-clock second on fixed scenarios."""
    from ssdlab import bench as b

    if list_:
        out.file.write("".join(f"{n}\n" for n in b.scenarios()))
        return
    bad = b.unknown(only)
    if bad:
        raise UsageError(f"--only: no scenario {', '.join(repr(n) for n in bad)} (ssdlab bench --list names them)")
    with Bar("benchmarking") as bar:
        rows = b.bench(scale, progress=bar, only=only, rounds=rounds)
    if json_:
        out.file.write(json.dumps({"scenarios": rows}, indent=2) + "\n")
        return
    b.print_table(out, rows)


FORMAT_HELP = "Trace format (default: detected): msr, spc, fiu, alibaba, tencent, blkparse, fio-v2, fio-v3, mqsim, disksim."


@trace_app.command("stats")
@ctrl_c_exits_130
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
    with Count("reading") as count:
        s = tr.stats(path, format_, strict=not lenient, blk_action=blk_action, devices=devices, progress=count)
    s["wall_s"] = time.monotonic() - t0
    if json_:
        out.file.write(json.dumps(s, indent=2) + "\n")
        return
    tr.print_stats(out, path, s)


@trace_app.command("convert")
@ctrl_c_exits_130
def trace_convert(
    path: str = typer.Argument(..., help="Trace file (plain, .gz or .bz2)."),
    output: str = typer.Option(..., "--output", "-o", help="Parquet file to write."),
    format_: Optional[str] = typer.Option(None, "--format", help=FORMAT_HELP),
    lenient: bool = typer.Option(False, help="Skip malformed lines and count them instead of stopping at the first."),
    blk_action: str = typer.Option("D", help="blkparse: the action whose events are I/Os (D issue, Q queue)."),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Convert a trace to ssdlab's canonical Parquet (time_ns, op, offset, len, dev)."""
    from . import trace as tr

    if not output.lower().endswith(".parquet"):
        raise UsageError(f"-o {output!r}: write a .parquet file")
    check_out(output, "-o", force)
    with Count("converting") as count:
        meta = tr.convert(path, output, format_, strict=not lenient, blk_action=blk_action, progress=count)
    c = meta["counts"]
    out.print(f"wrote {meta['records']:,} records ({meta['format']}) to {output}; {c['bad_lines']:,} malformed lines skipped, {c['zero_length']:,} zero-length requests dropped")


def _show_warning(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Optional[str] = None) -> None:
    """Warnings on the terminal as ``warning: ...``, without the Python file and line."""
    err.print(f"[yellow]warning:[/yellow] {escape(str(message))}", highlight=False)


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: runs the app and turns every user error into exit code 2."""
    debug = os.environ.get("SSDLAB_DEBUG") == "1"
    import warnings

    warnings.showwarning = _show_warning
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
        exit_interrupted()
    except Exception as e:
        if debug:
            raise
        err.print(f"[bold red]internal error:[/bold red] {type(e).__name__}: {escape(str(e))} (set SSDLAB_DEBUG=1 for a traceback; please report it)", highlight=False)
        sys.exit(1)
