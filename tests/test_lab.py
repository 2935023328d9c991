"""The laboratory: sweep specs, executors that agree bit for bit (a local pool, a dask
LocalCluster, and a dask scheduler with workers as processes), and a store that resumes, never
duplicates a row, and survives kill -9."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ssdlab
from ssdlab import lab
from ssdlab.exceptions import InputError
from ssdlab.store import Store

from conftest import ROOT
from test_cli import no_traceback

SPEC = {
    "name": "qd",
    "base": "p4800x",
    "set": {"workload.number_ios": 1500, "workload.numjobs": 1},
    "axes": {"workload.iodepth": [1, 4, 16], "workload.rw": ["randread", "randwrite"]},
}


def rows(path):
    return lab.open_store(path).drop(columns=["wall_s"]).sort_values("point_id").reset_index(drop=True)


def test_axes_lists_ranges_log_ranges_and_units():
    assert lab._axis("k", [1, 2]) == [1, 2]
    assert lab._axis("k", {"from": 1, "to": 4}) == [1, 2, 3, 4]
    assert lab._axis("k", {"from": 0.5, "to": 1.5, "step": 0.5}) == [0.5, 1.0, 1.5]
    assert lab._axis("k", {"from": 100, "to": 10000, "points": 3, "log": True, "unit": "ns"}) == ["100ns", "1000ns", "10000ns"]
    for bad, needle in (([], "at least one"), ({"from": 1}, "from` and `to"), ({"from": 0, "to": 10, "points": 3, "log": True}, "positive"), ({"from": 1, "to": 2, "sep": 1}, "unknown key")):
        with pytest.raises(InputError, match=needle):
            lab._axis("k", bad)


def test_grid_zip_repeats_and_derived_seeds():
    s = lab.Spec.load(dict(SPEC, repeats=2, seed=7))
    t = lab.tasks(s)
    assert len(t) == 3 * 2 * 2 and len({x.point_id for x in t}) == 12
    assert {x.seed for x in t if x.repeat == 0} == {7} and len({x.seed for x in t if x.repeat == 1}) == 1
    z = lab.Spec.load(dict(SPEC, mode="zip", axes={"workload.iodepth": [1, 4], "workload.bs": ["4k", "8k"]}))
    assert z.combinations() == [{"workload.iodepth": 1, "workload.bs": "4k"}, {"workload.iodepth": 4, "workload.bs": "8k"}]
    with pytest.raises(InputError, match="as many values"):
        lab.Spec.load(dict(SPEC, mode="zip", axes={"workload.iodepth": [1, 4], "workload.bs": ["4k"]}))
    with pytest.raises(InputError, match="unknown key"):
        lab.Spec.load(dict(SPEC, axis={}))
    with pytest.raises(InputError, match="media.nvm.controllers"):
        lab.tasks(lab.Spec.load(dict(SPEC, axes={"media.nvm.controllers": [0]})))


def test_a_point_is_a_plain_run_and_rerunning_does_no_work(tmp_path):
    store = tmp_path / "s.store"
    df = ssdlab.sweep(SPEC, store=str(store), executor="serial")
    assert len(df) == 6 and list(df["workload.iodepth"]) == [1, 1, 4, 4, 16, 16]
    plain = ssdlab.run("p4800x", workload={"number_ios": 1500, "numjobs": 1, "iodepth": 4, "rw": "randwrite"})
    row = df[(df["workload.iodepth"] == 4) & (df["workload.rw"] == "randwrite")].iloc[0]
    assert row["iops"] == plain.summary["iops"] and row["config_hash"] == plain.summary["config_hash"]
    assert row["metrics.nvm.start_gap.moves"] == plain.summary["metrics"]["nvm.start_gap.moves"]
    files = {f: os.stat(store / "points" / f).st_mtime_ns for f in os.listdir(store / "points")}
    _, todo, have = lab.plan(SPEC, str(store))
    assert {t.point_id for t in todo} <= have
    again = ssdlab.sweep(SPEC, store=str(store), executor="serial")
    assert again.drop(columns=["wall_s"]).equals(df.drop(columns=["wall_s"]))
    assert {f: os.stat(store / "points" / f).st_mtime_ns for f in os.listdir(store / "points")} == files


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ATC_SPEC = {"kind": "atc", "atc": {"ios": 20000, "lines": [1, 4, 16, 64], "stu": "2m"}, "axes": {"atc.vms": [1, 16], "atc.reuse": ["lifo", "random"]}}


def test_local_dask_local_and_a_dask_scheduler_give_identical_stores(tmp_path):
    ssdlab.sweep(SPEC, store=str(tmp_path / "local"), executor="local", workers=2)
    ssdlab.sweep(SPEC, store=str(tmp_path / "dl"), executor="dask-local", workers=2)
    ssdlab.sweep(ATC_SPEC, store=str(tmp_path / "atc-local"), executor="local", workers=2)
    ssdlab.sweep(ATC_SPEC, store=str(tmp_path / "atc-dl"), executor="dask-local", workers=2)
    port = free_port()
    dask = os.path.join(os.path.dirname(sys.executable), "dask")
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(2):
            worker = [dask, "worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"]
            procs.append(subprocess.Popen(worker, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ssdlab.sweep(SPEC, store=str(tmp_path / "remote"), executor=f"dask://127.0.0.1:{port}")
        ssdlab.sweep(ATC_SPEC, store=str(tmp_path / "atc-remote"), executor=f"dask://127.0.0.1:{port}")
    finally:
        # Workers first: a worker whose scheduler is already gone may retry for a long
        # while before it honours SIGTERM. Whatever is still up after 30 s is killed and reaped.
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    a, b, c = rows(tmp_path / "local"), rows(tmp_path / "dl"), rows(tmp_path / "remote")
    assert len(a) == 6 and a.equals(b) and a.equals(c)
    a, b, c = rows(tmp_path / "atc-local"), rows(tmp_path / "atc-dl"), rows(tmp_path / "atc-remote")
    assert len(a) == 4 and a.equals(b) and a.equals(c)


def test_kill_9_mid_sweep_resumes_to_exactly_one_row_per_point(tmp_path):
    spec = tmp_path / "big.toml"
    spec.write_text('base = "p4800x"\n[set]\n"workload.number_ios" = 20000\n"workload.numjobs" = 1\n[axes]\n"workload.iodepth" = { from = 1, to = 24 }\n')
    store = tmp_path / "big.store"
    args = [sys.executable, "-m", "ssdlab", "sweep", str(spec), "-j", "2"]
    p = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (store / "points").is_dir() or len([f for f in os.listdir(store / "points") if f.endswith(".parquet")]) < 3:
        if list(store.glob("points/*.parquet")):
            assert pd.read_parquet(store / "points")["point_id"].is_unique  # while it writes
        assert time.monotonic() < deadline and p.poll() is None, "no point finished"
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)  # the sweep alone, mid-write or not: its workers end by themselves
    p.wait()
    deadline = time.monotonic() + 10
    while (left := subprocess.run(["pgrep", "-a", "-g", str(p.pid)], capture_output=True, text=True).stdout.strip()):
        assert time.monotonic() < deadline, f"outlived the sweep: {left}"
        time.sleep(0.1)
    partial = lab.open_store(str(store))
    assert 3 <= len(partial) < 24 and partial["point_id"].is_unique
    assert len(pd.read_parquet(store / "points")) == len(partial)
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{24 - len(partial)} run, {len(partial)} already in" in r.stdout, r.stdout
    done = pd.read_parquet(store / "points")
    assert len(done) == 24 and done["point_id"].is_unique and sorted(done["workload.iodepth"]) == list(range(1, 25))
    assert not [f for f in os.listdir(store / "points") if f.startswith(".tmp-")]


def test_an_atc_study_per_point(tmp_path):
    spec = {"kind": "atc", "atc": {"ios": 100000, "lines": list(range(1, 129)), "stu": "2m"}, "axes": {"atc.vms": [1, 16], "atc.split": [True, False]}}
    df = ssdlab.sweep(spec, store=str(tmp_path / "a"), executor="serial").set_index(["atc.vms", "atc.split"])
    assert (df["accesses"] == 300000).all()  # SQE, data page and CQE of each 4 KiB I/O
    need = df["lines_90"]
    # One VM: 8 ring pages + one chunk of buffers; 16 VMs slicing the host: 2 pages each.
    assert need[(1, True)] == need[(1, False)] and 6 <= need[(1, True)] <= 9
    assert 3.0 <= need[(16, True)] / need[(1, True)] <= 5.0 and need[(16, False)] / need[(1, True)] >= 12
    assert (df["hit_rate@64"] >= df["hit_rate@8"]).all()
    # Points with different columns keep all of them: a 4-way cache has no 1- or 2-line size.
    ways = ssdlab.sweep({"kind": "atc", "atc": {"ios": 2000, "lines": [1, 2, 4, 8]}, "axes": {"atc.assoc": [4, "full"]}}, store=str(tmp_path / "w"), executor="serial")
    ways = ways.set_index("atc.assoc")
    assert ways["hit_rate@1"].isna()["4"] and ways["hit_rate@1"]["full"] > 0 and (ways["hit_rate@8"] > 0).all()
    curves = lab.open_store(str(tmp_path / "a"), "series")
    assert len(curves) == 4 * 128 and set(curves.columns) >= {"point_id", "lines", "hit_rate", "hits"}
    # A trace instead of a synthesised stream, its path relative to the spec file.
    (tmp_path / "t.csv").write_text("addr\n" + "".join(f"{hex((i % 3) << 21)}\n" for i in range(300)))
    (tmp_path / "t.toml").write_text('kind = "atc"\n[atc]\ntrace = "t.csv"\nlines = [1, 2, 4]\n[axes]\n"atc.policy" = ["lru", "fifo"]\n')
    t = ssdlab.sweep(str(tmp_path / "t.toml"), store=str(tmp_path / "t.store"), executor="serial")
    assert list(t["hit_rate@4"]) == [297 / 300] * 2 and list(t["hit_rate@1"]) == [0.0, 0.0]
    # Bad keys and values name themselves.
    for bad, needle in (({"atc.colour": ["red"]}, "atc.colour: unknown key"), ({"atc.policy": ["mru"]}, "atc.policy = 'mru'"), ({"atc.stu": ["3k"]}, "stu = 3k")):
        with pytest.raises(ssdlab.InputError, match=needle):
            ssdlab.sweep({"kind": "atc", "axes": bad}, store=str(tmp_path / "bad"), executor="serial")


def test_a_probe_per_point(tmp_path):
    spec = {"base": "p4800x", "kind": "probe", "probe": {"experiments": ["interleave"]}, "axes": {"media.nvm.controllers": [5, 7]}}
    df = ssdlab.sweep(spec, store=str(tmp_path / "p"), executor="serial")
    assert list(df["interleave.degree"]) == [5, 7] and (df["interleave.confidence"] > 0.8).all() and list(df["interleave.period"]) == [160, 224]
    assert (df["rule.crowded.verdict"] == "inconclusive").all()


def test_time_series_go_to_their_own_table(tmp_path):
    spec = dict(SPEC, set={**SPEC["set"], "stats.interval": "1ms", "workload.number_ios": 4000}, axes={"workload.iodepth": [4]})
    ssdlab.sweep(spec, store=str(tmp_path / "t"), executor="serial")
    ts = lab.open_store(str(tmp_path / "t"), "series")
    assert len(ts) > 3 and set(ts["point_id"]) == set(lab.open_store(str(tmp_path / "t"))["point_id"])


def test_cli_sweep_and_its_bad_input(cli, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('base = "p4800x"\n[set]\n"workload.number_ios" = 500\n[axes]\n"workload.iodepth" = [1, 2]\n')
    p = cli("sweep", str(spec), "--executor", "serial", "--json")
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)) == 2 and (tmp_path / "s.store" / "sweep.json").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "p4800x"\n[axes]\n"workload.iodepth" = [1, \n')
    cases = (
        ([str(bad)], "bad.toml"),
        ([str(tmp_path / "none.toml")], "no such file"),
        ([str(spec), "--executor", "cloud"], "--executor 'cloud'"),
        ([str(spec), "--store", str(tmp_path / "new"), "--executor", "dask://127.0.0.1:1"], "cannot reach"),
    )
    for args, needle in cases:
        r = cli("sweep", *args, timeout=120)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        no_traceback(r)
        assert needle in r.stderr, (needle, r.stderr)


SERIES_SPEC = dict(SPEC, set={**SPEC["set"], "stats.interval": "200us"})


def damage(path, how):
    if how == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")


def test_a_torn_or_foreign_file_is_set_aside_and_its_point_runs_again(tmp_path):
    # Issue 29, item 10: a truncated file made every later sweep fail (ArrowInvalid) until
    # deleted by hand, and a point file holding no row failed with KeyError.
    store = tmp_path / "d.store"
    first = ssdlab.sweep(SERIES_SPEC, store=str(store), executor="serial").drop(columns=["wall_s"])
    victims = sorted(store.glob("points/*.parquet"))[:2] + sorted(store.glob("series/*.parquet"))[:1]
    for n, path in enumerate(victims):
        damage(path, "truncate" if n % 2 == 0 else "empty")
    (store / "sweep.json").write_text('{"name": "q')  # torn too
    (store / "points" / "notes.txt").write_text("mine")
    (store / "points" / ("0" * 20 + ".parquet")).write_bytes((store / "points" / sorted(os.listdir(store / "points"))[-2]).read_bytes())
    _, _, have = lab.plan(SERIES_SPEC, str(store))  # a dry run reads past them, moving nothing
    assert len(have) == 4 and len(os.listdir(store / "points")) == 8
    with pytest.warns(ssdlab.StoreWarning) as caught:
        again = ssdlab.sweep(SERIES_SPEC, store=str(store), executor="serial").drop(columns=["wall_s"])
    said = " ".join(str(w.message) for w in caught)
    assert "does not read as Parquet" in said and "not a point file" in said and "not of 00000" in said, said
    assert again.equals(first)
    aside = sorted(os.listdir(store / "set-aside" / "points")) + sorted(os.listdir(store / "set-aside" / "series"))
    assert len(aside) == 5 and "notes.txt" in aside
    plain = pd.read_parquet(store / "points")
    assert len(plain) == 6 and plain["point_id"].is_unique
    assert set(pd.read_parquet(store / "series")["point_id"]) == set(plain["point_id"])
    assert json.loads((store / "sweep.json").read_text())["points"] == list(first["point_id"])


def test_the_store_of_an_earlier_version_is_converted(tmp_path):
    store = tmp_path / "old.store"
    new = ssdlab.sweep(SPEC, store=str(store), executor="serial")
    rows_ = pd.read_parquet(store / "points").to_dict("records")
    for f in os.listdir(store / "points"):
        os.unlink(store / "points" / f)
    pq.write_table(pa.Table.from_pylist(rows_[:3]), store / "points" / "batch-1.parquet")
    for r in rows_[3:5]:
        (store / "points" / f"{r['point_id']}.json").write_text(json.dumps([r]))
    (store / "points" / "x.json").write_text("[]")  # a point file holding no row
    with pytest.warns(ssdlab.StoreWarning, match="x.json does not read"):
        again = ssdlab.sweep(SPEC, store=str(store), executor="serial")
    assert again.drop(columns=["wall_s"]).equals(new.drop(columns=["wall_s"]))
    assert len(os.listdir(store / "points")) == 6 and len(pd.read_parquet(store / "points")) == 6


def test_columns_widen_so_plain_readers_read_every_step(tmp_path):
    # Plain readers take a directory's schema from one file: every file keeps one schema.
    st = lab.Store(str(tmp_path / "s"))
    st.create({"name": "s"})
    ids = [f"{i:020x}" for i in range(4)]
    steps = [{"point_id": ids[0], "x": 1, "n": None}, {"point_id": ids[1], "x": 1.5, "y": "two"},
             {"point_id": ids[2], "x": 2, "n": 7, "y": None}, {"point_id": ids[3], "x": True, "n": 8}]
    for k, row in enumerate(steps):
        st.write(row, [])
        df = pd.read_parquet(tmp_path / "s" / "points").set_index("point_id")
        assert len(df) == k + 1 and df["x"].notna().all()
        schemas = {str(pq.read_schema(p)) for p in (tmp_path / "s" / "points").glob("*.parquet")}
        assert len(schemas) == 1
    df = st.read().set_index("point_id")
    assert list(df["x"]) == ["1", "1.5", "2", "true"] and df.loc[ids[2], "n"] == 7 and df.loc[ids[1], "y"] == "two"
    assert df["n"].isna()[ids[0]]
    st.close()


def test_columns_carry_their_unit_and_description(tmp_path):
    ssdlab.sweep(dict(SERIES_SPEC, axes={"workload.iodepth": [2]}), store=str(tmp_path / "m"), executor="serial")
    t = pq.read_table(tmp_path / "m" / "points")
    meta = {f.name: f.metadata or {} for f in t.schema}
    assert all(m.get(b"description") for m in meta.values()), [k for k, m in meta.items() if not m.get(b"description")]
    assert meta["read.latency_us.p99"][b"unit"] == b"us" and meta["iops"][b"unit"] == b"IO/s"
    assert meta["metrics.ctrl.busy"][b"unit"] == b"ps" and b"firmware" in meta["metrics.ctrl.busy"][b"description"]
    assert b"config key workload.iodepth" in meta["workload.iodepth"][b"description"]
    series = pq.read_table(tmp_path / "m" / "series").schema
    assert series.field("lat_p99_us").metadata[b"unit"] == b"us"


def test_a_plain_script_and_python_c_can_sweep(tmp_path):
    # Issue 29, item 6: without a __main__ guard the pool re-ran the script (BrokenProcessPool).
    script = tmp_path / "study.py"
    script.write_text(
        "import ssdlab\n"
        f"df = ssdlab.sweep({SPEC!r}, store={str(tmp_path / 'p.store')!r}, workers=2)\n"
        "print('rows', len(df))\n"
    )
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.count("rows 6") == 1, r.stderr[-2000:]
    r = subprocess.run([sys.executable, "-c", script.read_text().replace("p.store", "c.store")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.count("rows 6") == 1, r.stderr[-2000:]


def test_a_second_sweep_on_a_store_in_use_is_refused(tmp_path):
    st = lab.Store(str(tmp_path / "busy"))
    st.create({"name": "busy"})
    with pytest.raises(InputError, match="another sweep is writing it"):
        ssdlab.sweep(SPEC, store=str(tmp_path / "busy"), executor="serial")
    st.close()
    assert len(ssdlab.sweep(SPEC, store=str(tmp_path / "busy"), executor="serial")) == 6


def test_an_axis_over_the_seed_wins_and_repeats_differ(tmp_path):
    spec = {"base": "p4800x", "set": {"workload.number_ios": 800, "workload.numjobs": 1}, "axes": {"workload.randseed": [3, 4]}}
    df = ssdlab.sweep(spec, store=str(tmp_path / "a"), executor="serial")
    assert list(df["seed"]) == [1, 1] and df["read.latency_us.mean"].nunique() == 2
    direct = ssdlab.run("p4800x", workload={"number_ios": 800, "numjobs": 1}, seed=4)
    assert df.iloc[1]["read.latency_us.mean"] == direct.summary["read"]["latency_us"]["mean"]
    with pytest.raises(InputError, match="seed"):
        lab.Spec.load({"set": {"workload.randseed": 3}})


def test_ctrl_c_stops_a_sweep_keeps_finished_points_and_leaves_no_worker(tmp_path):
    spec = tmp_path / "long.toml"
    spec.write_text('base = "default"\n[set]\n"workload.number_ios" = 2000000\n"workload.numjobs" = 1\n[axes]\n"workload.iodepth" = { from = 1, to = 12 }\n')
    store = tmp_path / "long.store"
    p = subprocess.Popen([sys.executable, "-m", "ssdlab", "sweep", str(spec), "-j", "2"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not Store(str(store)).done():  # a file in points/ may be one still being written
        assert time.monotonic() < deadline and p.poll() is None, "no point finished"
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole foreground group
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, (p.returncode, err)
    assert "interrupted" in err and "Traceback" not in err, err
    kept = lab.open_store(str(store))
    assert 1 <= len(kept) < 12 and kept["point_id"].is_unique
    # The workers are ended, and the pool's helpers (fork server, resource tracker) exit as
    # soon as they see the sweep gone.
    deadline = time.monotonic() + 10
    while (left := subprocess.run(["pgrep", "-a", "-g", str(p.pid)], capture_output=True, text=True).stdout.strip()):
        assert time.monotonic() < deadline, f"outlived the sweep: {left}"
        time.sleep(0.1)


def test_points_with_different_columns_keep_every_column(tmp_path):
    st = lab.Store(str(tmp_path / "s"))
    st.create({"name": "s"})
    a, b = "a" * 20, "b" * 20
    st.write({"point_id": a, "x": 1, "f": 0.1}, [])
    st.write({"point_id": b, "y": "two", "f": float("nan")}, [])
    df = st.read().set_index("point_id")
    assert df.loc[a, "x"] == 1 and df.loc[b, "y"] == "two" and df.loc[a, "f"] == 0.1
    assert df["x"].isna()[b] and df["y"].isna()[a] and df["f"].isna()[b]
    st.close()


def test_kill_9_of_the_sweep_alone_leaves_no_worker_behind(tmp_path):
    # Issue 29, item 12: only the sweep process is killed (not its process group, as a job
    # control or an OOM killer would); its workers stayed up 60 s later before.
    spec = tmp_path / "long.toml"
    spec.write_text('base = "default"\n[set]\n"workload.number_ios" = 2000000\n"workload.numjobs" = 1\n[axes]\n"workload.iodepth" = { from = 1, to = 12 }\n')
    store = tmp_path / "long.store"
    p = subprocess.Popen([sys.executable, "-m", "ssdlab", "sweep", str(spec), "-j", "2"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not Store(str(store)).done():  # a file in points/ may be one still being written
        assert time.monotonic() < deadline and p.poll() is None, "no point finished"
        time.sleep(0.05)
    assert subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split().__len__() >= 3, "the sweep, its fork server and workers"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 10
    while (left := subprocess.run(["pgrep", "-a", "-g", str(p.pid)], capture_output=True, text=True).stdout.strip()):
        assert time.monotonic() < deadline, f"outlived the sweep: {left}"
        time.sleep(0.1)
    assert pd.read_parquet(store / "points")["point_id"].is_unique  # readable as the kill left it


def test_a_spec_reports_every_problem_at_once_with_its_key_path(cli, tmp_path):
    # Issue 29, item 16: the first problem stopped the check; now all of them, with key paths.
    spec = tmp_path / "bad.toml"
    spec.write_text('kind = "sim"\nrepeats = 0\nseeds = 3\n[set]\n"workload.randseed" = 4\n[axes]\n"workload.iodepth" = []\n"workload.bs" = { from = 1 }\n')
    p = cli("sweep", str(spec), "--dry-run")
    assert p.returncode == 2, p.stderr
    no_traceback(p)
    for needle in ("bad.toml: 6 problems", "kind = 'sim'", "repeats = 0", "seeds = 3: unknown key", 'set."workload.randseed"', 'axes."workload.iodepth" = []', 'axes."workload.bs"'):
        assert needle in p.stderr, (needle, p.stderr)
    # Points whose configs do not load: each one, with its problem.
    with pytest.raises(InputError) as e:
        lab.tasks(lab.Spec.load({"base": "p4800x", "axes": {"media.nvm.controllers": [0, 4, 99999], "pcie.lanes": [3, 4]}}))
    text = str(e.value)
    assert "points of the sweep do not load" in text and text.count("  - sweep point") == 5, text
    assert "pcie.lanes = 3" in text and "media.nvm.controllers = 0" in text


def test_a_store_holds_its_specs_points_and_keeps_the_others_aside(tmp_path):
    # Issue 29, item 10: a row of a point the spec does not have stayed (21 rows for a
    # 20-point spec). Points of another spec move aside, and come back when a spec names them.
    store = tmp_path / "f.store"
    first = ssdlab.sweep(SPEC, store=str(store), executor="serial")
    narrow = dict(SPEC, axes={"workload.iodepth": [1, 4], "workload.rw": ["randread"]})
    with pytest.warns(ssdlab.StoreWarning, match="4 point.s. of another spec moved"):
        two = ssdlab.sweep(narrow, store=str(store), executor="serial")
    assert len(two) == 2 and len(pd.read_parquet(store / "points")) == 2 and len(lab.open_store(str(store))) == 2
    with pytest.warns(ssdlab.StoreWarning, match="4 point.s. this spec names came back"):
        again = ssdlab.sweep(SPEC, store=str(store), executor="serial")
    # Not run again: even each point's wall time is the first run's.
    assert again["wall_s"].tolist() == first["wall_s"].tolist()
    assert len(pd.read_parquet(store / "points")) == 6 and len(pd.read_parquet(store / "series")) == 0
