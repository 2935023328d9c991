"""The command line: outputs, exit codes, and bad input that never shows a traceback."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, SHARED


def no_traceback(p):
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr, p.stderr


def test_run_json_document(cli):
    p = cli("run", "--json", "-w", "numjobs=1", "-w", "number_ios=3000")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["ios"] == 3000
    for key in ("version", "config_hash", "seed", "ios", "sim_time_s", "wall_time_s", "iops", "bandwidth_mib_s", "breakdown_us"):
        assert key in s
    for key in ("mean", "p50", "p90", "p99", "p999", "p9999", "max"):
        assert key in s["read"]["latency_us"]


def test_a_json_run_and_an_atc_study_import_only_what_they_use(tmp_path):
    # What a command imports is most of its start: rich and the summary's tables, pandas and
    # pyarrow (frames), tomllib and the store's modules are left for the commands that print a
    # table, make a frame, read TOML in Python or sweep. Counted by module, not timed.
    trace = tmp_path / "a.u64"
    trace.write_bytes(b"".join((i * 4096).to_bytes(8, "little") for i in range(1000)))
    heavy = ("rich", "pandas", "pyarrow", "numpy", "matplotlib", "tomllib", "tomli", "ssdlab.lab", "ssdlab.store", "ssdlab.summary")
    runs = {
        "run --json": ["run", "--json", "-w", "number_ios=100"],
        "atc --json": ["atc", str(trace), "--stu", "4k", "--policy", "lru", "--assoc", "4", "--lines", "64", "--json"],
    }
    for what, args in runs.items():
        code = (
            "import atexit, sys\n"
            "atexit.register(lambda: print(' '.join(sorted(sys.modules)), file=sys.stderr))\n"
            f"sys.argv = ['ssdlab', *{args!r}]\n"
            "from ssdlab.cli import main\n"
            "main()\n"
        )
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert p.returncode == 0, p.stderr
        json.loads(p.stdout)
        loaded = set(p.stderr.split())
        assert "ssdlab._core" in loaded, what
        assert not {m for m in loaded if m.split(".")[0] in heavy or m in heavy}, what
    # A table does need rich, and the command still prints it.
    p = subprocess.run([sys.executable, "-m", "ssdlab", "atc", str(trace), "--stu", "4k", "--policy", "lru", "--assoc", "4", "--lines", "64"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0 and "Hit rate, STU 4 KiB" in p.stdout, p.stderr


def test_run_table_with_no_arguments_uses_the_embedded_default(cli):
    p = cli("run", "--set", "workload.number_ios=2000")
    assert p.returncode == 0, p.stderr
    assert "Where the time goes" in p.stdout and "host_queueing" in p.stdout and "cores per GB/s" in p.stdout and "host_software" in p.stdout and "IOPS" in p.stdout
    assert "fast-NVM (PCM) NVMe SSD" in p.stdout


def test_same_seed_same_json_except_wall_time(cli):
    def once():
        p = cli("run", "--json", "--seed", "11", "-w", "numjobs=2", "-w", "rw=randrw", "-w", "number_ios=3000")
        assert p.returncode == 0, p.stderr
        s = json.loads(p.stdout)
        s.pop("wall_time_s")
        return s

    assert once() == once()


def test_bad_config_file_lists_every_problem_and_exits_2(cli, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('extends = "default"\n[pcie]\nlanes = 0\nmps = 100\n[nvme]\nqueue_depth = 0\n[workload]\nbs = "1000"\n[stats]\npercentiles = [101]\n')
    p = cli("run", str(f))
    assert p.returncode == 2
    no_traceback(p)
    for needle in ("pcie.lanes = 0", "pcie.mps = 100", "nvme.queue_depth = 0", 'workload.bs = 1000B', "stats.percentiles[0] = 101"):
        assert needle in p.stderr, (needle, p.stderr)
    assert "5 problems" in p.stderr


def test_type_errors_unknown_keys_and_syntax_errors_exit_2(cli, tmp_path):
    f = tmp_path / "typo.toml"
    f.write_text('[pcie]\nlanse = 4\ngen = "four"\n')
    p = cli("run", str(f))
    assert p.returncode == 2
    no_traceback(p)
    assert "pcie.lanse" in p.stderr and "did you mean `lanes`" in p.stderr
    assert 'pcie.gen = "four"' in p.stderr
    g = tmp_path / "syntax.toml"
    g.write_text("[pcie]\nlanes = = 4\n")
    p = cli("run", str(g))
    assert p.returncode == 2 and "syntax.toml:2:" in p.stderr
    no_traceback(p)


def test_other_bad_input_exits_2(cli):
    cases = [
        ("run", "no-such-preset"),
        ("run", "missing/dir/config.toml"),
        ("run", "-w", "iodepth"),
        ("run", "-w", "iodepth=0"),
        ("run", "-w", "bs=4q"),
        ("run", "--set", "pcie.gen=9"),
        ("run", "--set", "pcie=3"),
        ("run", "--no-such-option"),
        ("run", "--seed", "many"),
        ("config", "show", "nothing-here"),
        ("bench", "--scale", "0"),
        ("bench", "--only", "randread-4k-qd64"),
        ("run", "--max-memory", "lots"),
        ("run", "--max-memory", "0"),
        ("no-such-command",),
    ]
    for args in cases:
        p = cli(*args)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        no_traceback(p)
        assert p.stderr.strip(), args


def test_a_run_too_big_for_memory_is_refused_before_allocating(cli, tmp_path):
    # Issue 16: this geometry aborted allocating 32 GiB (rc 134); now the estimate refuses it.
    p = cli("run", "tlc", "--set", "media.nand.blocks_per_plane=1048576", "--set", "media.nand.channels=64", "--set", "media.nand.ways=16")
    assert p.returncode == 2, p.stderr
    no_traceback(p)
    assert "memory" in p.stderr and "estimated" in p.stderr and "exceeds the limit" in p.stderr, p.stderr
    # The same for a job file's run, and a limit set lower than a small run needs.
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randread\nnumber_ios=100\n")
    p = cli("run", str(job), "--device", "tlc-aged", "--max-memory", "1MiB")
    assert p.returncode == 2 and "exceeds the limit of 1MiB" in p.stderr, p.stderr
    assert cli("run", "tlc", "-w", "number_ios=100", "--max-memory", "4GiB").returncode == 0


def test_presets_and_config_show(cli, tmp_path):
    p = cli("presets")
    assert p.returncode == 0 and "default-hw" in p.stdout and "dram-polled" in p.stdout
    p = cli("config", "show", "default-hw", "--set", "pcie.lanes=8")
    assert p.returncode == 0, p.stderr
    assert 'mode = "hardware"' in p.stdout and "lanes = 8" in p.stdout
    # What `config show` prints loads back to the same config.
    f = tmp_path / "resolved.toml"
    f.write_text(p.stdout)
    again = cli("config", "show", str(f))
    assert again.returncode == 0 and again.stdout.splitlines()[1:] == p.stdout.splitlines()[1:]


def test_flash_runs_show_waf_and_gc(cli):
    p = cli("run", "tlc-aged", "--set", "media.nand.blocks_per_plane=64", "-w", "number_ios=20000")
    assert p.returncode == 0, p.stderr
    for needle in ("flash: WAF", "GC victims", "preconditioned: aged", "nand dies", "p99.99"):
        assert needle in p.stdout, (needle, p.stdout)
    p = cli("run", "tlc", "--json", "-w", "number_ios=2000")
    s = json.loads(p.stdout)
    assert s["flash"]["nand"]["host_reads"] == 2000 and s["flash"]["precondition"]["state"] == "sequential"


def test_bench_json(cli):
    p = cli("bench", "--json", "--scale", "0.01")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["scenarios"]
    assert [r["name"] for r in rows] == [
        "randread-4k-qd1", "randread-4k-qd32", "randwrite-4k-qd32", "seqread-128k-qd8", "optane-randread-4k-qd16", "tlc-randread-4k-qd16",
        "tlc-seqread-128k-qd8", "tlc-seqwrite-128k-qd8", "tlc-aged-randwrite-4k-qd32", "tlc-aged-randtrimwrite-4k-qd32",
        "tlc-aged-1tib-randwrite-4k-qd32", "tlc-buffered-seqread-4k", "tlc-buffered-randwrite-4k",
        "zns-zbd-randwrite-16k", "mqsim-randread-4k-qd32", "mqsim-cmt-randread-4k-qd32",
        "moneta-16-threads-4k", "openexpress-hw-randwrite-16k", "seed003-4-tenants-aged",
        "seed003-4-tenants-isolated-fair", "seed003-4-tenants-fdp", "atc-4way-lru-replay", "atc-fa-lru-curve-64k", "atc-4way-lru-raw-file", "trace-stats-mqsim",
    ]
    for r in rows:
        assert set(r) >= {"name", "ios", "wall_s", "sim_ios_per_sec"} and r["ios"] > 0 and r["sim_ios_per_sec"] > 0


def test_bench_runs_only_the_scenarios_named(cli):
    names = cli("bench", "--list").stdout.split()
    assert names[:2] == ["randread-4k-qd1", "randread-4k-qd32"] and "atc-4way-lru-raw-file" in names
    # Named out of order: they run in the bench's order, each once.
    p = cli("bench", "--json", "--scale", "0.01", "--only", "randwrite-4k-qd32", "--only", "randread-4k-qd1")
    assert p.returncode == 0, p.stderr
    assert [r["name"] for r in json.loads(p.stdout)["scenarios"]] == ["randread-4k-qd1", "randwrite-4k-qd32"]
    bad = cli("bench", "--only", "randread-4k-qd64")
    assert bad.returncode == 2 and "randread-4k-qd64" in bad.stderr and "--list" in bad.stderr


def test_bench_rounds_report_each_scenarios_median_run(cli):
    p = cli("bench", "--json", "--scale", "0.01", "--rounds", "3", "--only", "randread-4k-qd1", "--only", "randwrite-4k-qd32")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["scenarios"]
    assert [r["name"] for r in rows] == ["randread-4k-qd1", "randwrite-4k-qd32"]
    for r in rows:
        walls = r["runs_wall_s"]
        assert r["rounds"] == 3 and len(walls) == 3
        # The row is the median run's own: its wall time, and the rate from it.
        assert r["wall_s"] == sorted(walls)[1]
        assert abs(r["sim_ios_per_sec"] * r["wall_s"] - r["ios"]) <= 1e-6 * r["ios"]
    table = cli("bench", "--scale", "0.01", "--rounds", "2", "--only", "randread-4k-qd1")
    assert table.returncode == 0 and "min-max s" in table.stdout
    assert re.search(r"\d\.\d{3}-\d\.\d{3}", table.stdout), table.stdout
    bad = cli("bench", "--rounds", "0")
    assert bad.returncode == 2 and "--rounds" in bad.stderr and "Traceback" not in bad.stderr


def test_bench_rounds_run_the_set_round_after_round_and_keep_the_lower_middle(monkeypatch):
    # A stand-in core whose runs take known times: the calls must go round after round (so that
    # a drifting machine slows every scenario alike), and an even count keeps the lower middle.
    from ssdlab import bench as b

    calls = []
    times = {"a": [0.5, 0.2, 0.4, 0.3], "b": [0.9, 0.7, 0.8, 0.6]}

    class Core:
        @staticmethod
        def bench_scenarios():
            return ["a", "b"]

        @staticmethod
        def bench_run(name, scale):
            wall = times[name][sum(1 for c in calls if c == name)]
            calls.append(name)
            return json.dumps({"name": name, "ios": 100, "events": 1, "wall_s": wall, "sim_ios_per_sec": 100 / wall, "precondition_s": 0.0})

    monkeypatch.setattr(b, "_core", Core)
    seen = []
    rows = b.bench(1.0, progress=seen.append, rounds=4)
    assert calls == ["a", "b"] * 4
    assert seen == [k / 8 for k in range(1, 9)]
    assert [(r["name"], r["wall_s"], r["sim_ios_per_sec"]) for r in rows] == [("a", 0.3, 100 / 0.3), ("b", 0.7, 100 / 0.7)]
    assert [r["runs_wall_s"] for r in rows] == [times["a"], times["b"]]
    # One round: each run as the core gave it, without the rounds' fields.
    calls.clear()
    one = b.bench(1.0)
    assert calls == ["a", "b"] and [(r["name"], r["wall_s"]) for r in one] == [("a", 0.5), ("b", 0.9)]
    assert all("rounds" not in r and "runs_wall_s" not in r for r in one)
    with pytest.raises(ValueError, match="rounds"):
        b.bench(1.0, rounds=0)


def test_ctrl_c_stops_a_long_run_cleanly():
    env = dict(os.environ)
    p = subprocess.Popen(
        [sys.executable, "-m", "ssdlab", "run", "-w", "number_ios=100000000"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    time.sleep(2.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err)
    assert "interrupted" in err and "Traceback" not in err


def test_decompose_seed001_shares(cli, tmp_path):
    """Firmware spends most of a fast medium's read outside the medium; hardware automation removes it;
    on slow flash the medium dominates either way (seed 001's decomposition)."""
    media = "tlc=450us,mram=65ns"
    fw = json.loads(cli("decompose", "openexpress-fw", "--json", "--ios", "200", "--media", media).stdout)
    hw = json.loads(cli("decompose", "openexpress-hw", "--json", "--ios", "200", "--media", media).stdout)

    def nvm_share(row):
        return row["NVM"] / sum(row.values())

    assert nvm_share(fw["tlc"]) > 0.9 and nvm_share(hw["tlc"]) > 0.9
    assert nvm_share(fw["mram"]) < 0.5 < nvm_share(hw["mram"])
    assert sum(hw["mram"].values()) < sum(fw["mram"].values())
    png = tmp_path / "dec.png"
    p = cli("decompose", "--ios", "100", "--media", media, "--plot", str(png))
    assert p.returncode == 0 and png.stat().st_size > 1000, p.stderr
    bad = cli("decompose", "--media", "tlc")
    assert bad.returncode == 2
    no_traceback(bad)


def test_metrics_are_listed_and_reported_flat_with_a_time_series(cli, tmp_path):
    p = cli("run", "tlc", "--metrics")
    assert p.returncode == 0, p.stderr
    assert "ftl.gc.victims" in p.stdout and "nand.dies.busy" in p.stdout and "pcie.up.wire_bytes" in p.stdout
    p = cli("run", "--metrics", "--json")
    listed = {m["name"]: m for m in json.loads(p.stdout)}
    assert listed["pcie.up.wire_bytes"]["unit"] == "B" and listed["pcie.up.wire_bytes"]["kind"] == "counter"
    p = cli("run", "--json", "-w", "numjobs=1", "-w", "number_ios=3000", "--set", "stats.interval=1ms")
    s = json.loads(p.stdout)
    assert set(listed) <= set(s["metrics"])
    assert sum(r["ios"] for r in s["timeseries"]["rows"] if r["tenant"] == "all") == 3000
    p = cli("run", "-w", "numjobs=1", "-w", "number_ios=3000", "--set", "stats.interval=1ms")
    assert "time series:" in p.stdout
    cfg = tmp_path / "two.toml"
    cfg.write_text('extends = "default"\n[workload]\nnumjobs = 1\nnumber_ios = 500\n[[workload.jobs]]\ntenant = "[a]"\n[[workload.jobs]]\ntenant = "b"\nrw = "randwrite"\n')
    p = cli("run", str(cfg))
    assert p.returncode == 0, p.stderr
    assert "Per tenant" in p.stdout and "[a]" in p.stdout
    p = cli("run", "--set", "stats.interval=1ms", "--set", 'stats.interval_metrics=["nope"]')
    assert p.returncode == 2 and "stats.interval_metrics[0]" in p.stderr
    no_traceback(p)


def test_until_steady_reports_the_rounds_and_stops(cli):
    p = cli("run", "-w", "number_ios=200000", "--set", "stats.interval=1ms", "--until-steady", "iops")
    assert p.returncode == 0, p.stderr
    assert "steady state (SNIA PTS) of iops: reached in rounds" in p.stdout and "rounds of iops" in p.stdout
    p = cli("run", "--json", "-w", "number_ios=200000", "--set", "stats.interval=1ms", "--until-steady", "iops")
    s = json.loads(p.stdout)
    assert s["steady_state"]["reached"] and s["ios"] < 800_000
    p = cli("run", "--until-steady", "iops")
    assert p.returncode == 2 and "needs a round" in p.stderr
    no_traceback(p)


def test_plot_series_writes_the_gc_time_series(cli, tmp_path):
    png = tmp_path / "gc.png"
    p = cli("run", "ops-isolation", "-w", "number_ios=3000", "--set", "stats.interval=50ms", "--plot-series", str(png))
    assert p.returncode == 0, p.stderr
    assert png.stat().st_size > 10_000
    p = cli("run", "ops-isolation", "--plot-series", str(tmp_path / "other.png"))
    assert p.returncode == 2 and "needs intervals" in p.stderr
    no_traceback(p)
    p = cli("run", "ops-isolation", "--set", "stats.interval=50ms", "--plot-series", "gc.pdf")
    assert p.returncode == 2 and "--plot-series 'gc.pdf'" in p.stderr


def test_the_run_header_names_the_overrides(cli):
    p = cli("run", "tlc", "--set", "ftl.precondition=clean", "-w", "number_ios=300")
    assert p.returncode == 0, p.stderr
    head = " ".join(p.stdout.splitlines()[:3])
    assert "with workload.number_ios=300, ftl.precondition=clean" in " ".join(head.split())


def test_error_text_with_brackets_and_bad_includes_reach_the_terminal(cli, tmp_path):
    # Issue 16: rich's markup ate "[name]" out of messages; an include of /dev/zero ran out of
    # memory. Both are now plain exit-2 errors that say what is wrong.
    bad = tmp_path / "bad.fio"
    bad.write_text("[global\nrw=read\n")
    p = cli("run", str(bad))
    assert p.returncode == 2 and "a section header is [name]" in p.stderr, p.stderr
    inc = tmp_path / "inc.fio"
    inc.write_text("[j]\ninclude /dev/zero\n")
    p = cli("run", str(inc))
    assert p.returncode == 2 and "include /dev/zero: not a regular file" in p.stderr, p.stderr


def test_an_output_in_a_missing_directory_is_an_exit_2_error_naming_it(cli, tmp_path):
    # Issue 16: these were rc 1 "internal error" after the work was done.
    missing = tmp_path / "nope" / "out"
    for args in (("atc", "--plot", f"{missing}.png"), ("decompose", "--plot", f"{missing}.svg")):
        p = cli(*args)
        assert p.returncode == 2 and "does not exist" in p.stderr and "nope" in p.stderr, (args, p.stderr)
        no_traceback(p)


@pytest.mark.shared("data/traces/msr-cambridge1-sample.csv")
def test_a_trace_converted_into_a_missing_directory_is_an_exit_2_error_naming_it(cli, tmp_path):
    sample = SHARED / "data" / "traces" / "msr-cambridge1-sample.csv"
    p = cli("trace", "convert", str(sample), "-o", str(tmp_path / "nope" / "out.parquet"))
    assert p.returncode == 2 and "does not exist" in p.stderr and "nope" in p.stderr, p.stderr
    no_traceback(p)


def test_a_time_that_overflows_is_an_error_naming_the_key(cli):
    # Issue 16: this returned 0 with saturated time (p50 0.001 us).
    p = cli("run", "tlc", "--set", "ctrl.firmware.fetch_cycles=9223372036854775807")
    assert p.returncode == 2, p.stderr
    no_traceback(p)
    assert "ctrl.firmware.fetch_cycles = 9223372036854775807" in p.stderr and "overflows simulated time" in p.stderr, p.stderr
    p = cli("run", "--set", "workload.thinktime=2000000s")
    assert p.returncode == 2 and "workload.thinktime" in p.stderr and "overflows simulated time" in p.stderr, p.stderr
    # Each cost within bounds, but together past what time holds: stopped, not saturated.
    costs = [a for k in ("fetch", "parse", "prp", "translate", "completion") for a in ("--set", f"ctrl.firmware.{k}_cycles=1000000000000000")]
    p = cli("run", *costs, "-w", "numjobs=1", "-w", "number_ios=100000")
    assert p.returncode == 2 and "simulated time overflows" in p.stderr, p.stderr
    no_traceback(p)


def test_rules_between_keys_are_reported_with_a_bad_key(cli):
    p = cli("run", "--set", "pcie.lanes=wide", "--set", "workload.iodepth=2000")
    assert p.returncode == 2
    no_traceback(p)
    assert "pcie.lanes" in p.stderr and "workload.iodepth = 2000: must be <= nvme.queue_depth - 1" in p.stderr, p.stderr


def test_trace_stats_blame_a_bad_early_line_on_itself_and_lenient_skips_it(cli, tmp_path):
    t = tmp_path / "t.csv"
    lines = [f"{128166372000000000 + i},hm,0,Read,{4096 * i},4096,100" for i in range(20)]
    lines.insert(7, "128166372000000007,hm,0,Read,zebra,4096,100")
    t.write_text("\n".join(lines) + "\n")
    p = cli("trace", "stats", str(t))
    assert p.returncode == 2 and f"{t}:8:" in p.stderr and "zebra" in p.stderr, p.stderr
    no_traceback(p)
    p = cli("trace", "stats", str(t), "--lenient", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert (s["format"], s["ios"], s["bad_lines"]) == ("msr", 20, 1)


def test_trace_stats_of_huge_requests_in_bounded_memory(cli, tmp_path):
    # Issue 16: two lines filled memory and aborted (rc 134), strict and lenient alike.
    t = tmp_path / "huge.csv"
    t.write_text("0,hm,0,Read,0,4096,100\n1,hm,0,Write,8192,18446744073709551615,100\n")
    p = cli("trace", "stats", str(t))
    assert p.returncode == 2 and f"{t}:2:" in p.stderr and "beyond 64-bit" in p.stderr, p.stderr
    no_traceback(p)
    p = cli("trace", "stats", str(t), "--lenient", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["bad_lines"] == 1, p.stderr
    t.write_text(f"0,hm,0,Read,0,4096,100\n1,hm,0,Write,8192,{1 << 50},100\n")
    p = cli("trace", "stats", str(t), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["footprint_bytes"] == 4096 + (1 << 50)


def test_invalid_utf8_in_a_config_job_file_sweep_spec_or_run_json_names_its_line(cli, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_bytes(b'extends = "default"\n# caf\xe9\n')
    p = cli("run", str(f))
    assert p.returncode == 2 and f"{f}:2" in p.stderr and "invalid UTF-8" in p.stderr, p.stderr
    no_traceback(p)
    j = tmp_path / "bad.fio"
    j.write_bytes(b"[job]\nrw=randread\nbs=4k\xff\n")
    p = cli("run", str(j))
    assert p.returncode == 2 and f"{j}:3" in p.stderr and "invalid UTF-8" in p.stderr, p.stderr
    no_traceback(p)
    spec = tmp_path / "bad-sweep.toml"
    spec.write_bytes(b'name = "x"\n# caf\xe9\n')
    out = tmp_path / "r.html"
    summary = tmp_path / "bad.json"
    summary.write_bytes(b'{"a":\n"caf\xe9"}\n')
    for args, where in [(("sweep", str(spec)), f"{spec}:2"), (("report", str(summary), "-o", str(out)), f"{summary}:2")]:
        p = cli(*args)
        assert p.returncode == 2 and where in p.stderr and "invalid UTF-8" in p.stderr, (args, p.stderr)
        no_traceback(p)


def _interrupt(args, after=3.0):
    """Starts the CLI, sends Ctrl-C after `after` seconds; returns (rc, stderr, seconds to exit)."""
    p = subprocess.Popen([sys.executable, "-m", "ssdlab", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    p.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return p.returncode, err, time.monotonic() - t0


def test_ctrl_c_stops_atc_and_ageing_quickly_and_writes_nothing(tmp_path):
    # Issue 16: atc and ageing took 8-12 s to respond. A generous bound: the check is every 50 ms.
    trace, out = tmp_path / "s.csv", tmp_path / "points.json"
    for args in (
        ["atc", "--synth", "linux-direct", "--ios", "100000000", "--write-trace", str(trace), "-o", str(out)],
        ["atc", "--synth", "linux-direct", "--ios", "100000000", "--policy", "lru,fifo,random,opt", "-o", str(out)],
        ["run", "tlc", "--set", "ftl.precondition=aged", "--set", "ftl.aging=simulate", "--set", "ftl.precondition_drive_writes=50", "-w", "number_ios=1000"],
    ):
        rc, err, took = _interrupt(args)
        assert rc == 130 and "interrupted" in err and "Traceback" not in err, (args, rc, err)
        assert took < 5, (args, took)
        assert list(tmp_path.iterdir()) == [], (args, list(tmp_path.iterdir()))


def test_integrity_mode_reports_its_checks(cli):
    p = cli("run", "tlc", "--set", "ftl.integrity=true", "--set", "media.nand.blocks_per_plane=64", "-w", "rw=randrw", "-w", "number_ios=3000")
    assert p.returncode == 0, p.stderr
    assert "integrity: ok:" in p.stdout and "lost 0, stale 0, duplicated 0" in p.stdout and "invariants hold" in p.stdout, p.stdout


def test_version_completion_and_help_texts_that_name_toml_tables(cli):
    # Issue 29, item 14 (each failed before: no --version, no completion, and rich markup ate
    # the bracketed table names from the help).
    import ssdlab

    v = cli("--version")
    assert v.returncode == 0 and v.stdout.strip() == f"ssdlab {ssdlab.__version__}"
    h = cli("--help")
    assert h.returncode == 0 and "--install-completion" in h.stdout and "--show-completion" in h.stdout
    sweep = " ".join(cli("sweep", "--help").stdout.split())
    assert "seed, [set], [axes]." in sweep, sweep
    run = " ".join(cli("run", "--help").stdout.split())
    assert "(see [workload.replay])" in run, run


def test_a_block_size_in_si_units_says_which_units_config_values_use(cli):
    # Issue 29, item 15: `--set workload.bs=4kB` is 4000 B; the error names the two conventions.
    p = cli("run", "--set", "workload.bs=4kB")
    assert p.returncode == 2, p.stderr
    text = " ".join(p.stderr.split())
    assert "workload.bs = 4000B" in text and "SI/IEC" in text and "4KiB is 4096 B" in text and "fio's units, where 4k is 4096 B" in text, text
    no_traceback(p)


@pytest.mark.parametrize("args", [["-w", "number_ios=1P"], ["--set", 'workload.number_ios="1PiB"'], ["-w", "number_ios=4294967296"]])
def test_unbounded_io_counts_are_refused(cli, args):
    # Issue 29, item 20: each ran until killed before.
    p = cli("run", *args)
    assert p.returncode == 2, p.stderr
    assert "number_ios" in p.stderr and "between 1 and 1000000000" in p.stderr, p.stderr
    no_traceback(p)


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="no /proc/self/environ here")
def test_a_job_file_that_includes_the_environment_never_prints_it(cli, tmp_path):
    # Issue 29, item 19: the include limit trusted the reported size (0 for /proc files) and
    # the error quoted the file's first line, the process environment.
    job = tmp_path / "env.fio"
    job.write_text("[j]\ninclude /proc/self/environ\n")
    p = cli("run", str(job), env={"SSDLAB_SECRET_TOKEN": "hunter2"})
    assert p.returncode == 2 and "/proc/self/environ: not a job file (it holds NUL bytes)" in p.stderr, p.stderr
    assert "hunter2" not in p.stderr + p.stdout and "secret" not in (p.stderr + p.stdout).lower()
    no_traceback(p)
    # The named job file has the include's limit too.
    big = tmp_path / "big.fio"
    big.write_text("[j]\n" + ";" * (5 << 20) + "\n")
    p = cli("run", str(big))
    assert p.returncode == 2 and "a job file is at most 4194304 bytes" in p.stderr, p.stderr
    no_traceback(p)


def test_outputs_are_never_replaced_silently(cli, tmp_path):
    # Issue 29, item 17: every output file option refuses a file that exists unless --force.
    trace = tmp_path / "t.csv"  # MSR Cambridge's format
    trace.write_text("128166372003061629,hm,0,Read,383496192,32768,1001\n128166372013061629,hm,0,Write,4096,4096,900\n")
    run_json = tmp_path / "run.json"
    run_json.write_text(cli("run", "p4800x", "-w", "number_ios=200", "--json").stdout)
    cases = [
        (["trace", "convert", str(trace), "-o"], "t.parquet"),
        (["decompose", "--ios", "50", "--media", "a=1us", "--plot"], "d.png"),
        (["report", str(run_json), "--no-figures", "-o"], "r.html"),
        (["run", "p4800x", "-w", "number_ios=300", "--set", "stats.interval=10us", "--plot-series"], "s.png"),
        (["atc", "--synth", "linux-direct", "--ios", "200", "--lines", "1,2", "--stu", "4k", "--policy", "lru", "--assoc", "full", "-o"], "a.csv"),
    ]
    for args, name in cases:
        target = tmp_path / name
        target.write_bytes(b"mine")
        p = cli(*args, str(target))
        assert p.returncode == 2 and "exists (give --force to replace it)" in p.stderr, (args, p.stderr)
        no_traceback(p)
        assert target.read_bytes() == b"mine", args
        p = cli(*args, str(target), "--force")
        assert p.returncode == 0, (args, p.stderr)
        assert target.read_bytes() != b"mine", args
    # A probe's directory: its contract files are replaced only with --force.
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "contract.json").write_text("{}")
    p = cli("probe", "p4800x", "-e", "tiny", "--ios", "100", "-o", str(tmp_path / "probe"))
    assert p.returncode == 2 and "contract.json from an earlier run" in p.stderr, p.stderr
