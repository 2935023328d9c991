"""The Python API: run(), Config, Result tables, exceptions, determinism, cancellation."""

import json

import pandas as pd
import pytest

import ssdlab
from ssdlab import _core
from ssdlab.exceptions import issues

SMALL = {"numjobs": 1, "number_ios": 2000}


def test_run_returns_the_documented_summary():
    r = ssdlab.run(workload=SMALL)
    s = r.summary
    for key in ("version", "config_hash", "seed", "ios", "sim_time_s", "wall_time_s", "iops", "bandwidth_mib_s", "read", "write", "breakdown_us"):
        assert key in s, key
    assert s["ios"] == 2000 and s["seed"] == 1 and s["version"] == ssdlab.__version__
    for op in ("read", "write"):
        for key in ("ios", "iops", "bandwidth_mib_s", "latency_us", "breakdown_us"):
            assert key in s[op]
        assert set(s[op]["latency_us"]) >= {"mean", "p50", "p90", "p99", "p999", "p9999", "max"}
    assert list(s["breakdown_us"]) == ssdlab.components()
    lat = s["read"]["latency_us"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"] * 1.001


def test_tables_are_dataframes():
    r = ssdlab.run(workload={**SMALL, "rw": "randrw"})
    assert isinstance(r.latency, pd.DataFrame) and list(r.latency.index) == ["read", "write"]
    assert r.latency.loc["read", "mean_us"] == pytest.approx(r.summary["read"]["latency_us"]["mean"])
    b = r.breakdown
    assert list(b.columns) == ssdlab.components() and list(b.index) == ["read", "write", "all"]
    # The mean breakdown adds up to the mean latency.
    assert b.loc["read"].sum() == pytest.approx(r.latency.loc["read", "mean_us"], abs=1e-3)


def test_per_io_rows_add_up_exactly():
    r = ssdlab.run(workload={**SMALL, "iodepth": 8, "rw": "randrw"}, keep_ios=True)
    ios = r.ios
    assert ios is not None and len(ios) == 2000
    parts = ios[[f"{c}_us" for c in ssdlab.components()]].sum(axis=1)
    assert (parts - ios["latency_us"]).abs().max() < 1e-6
    assert set(ios["op"].unique()) == {"read", "write"}
    assert ssdlab.run(workload=SMALL).ios is None


def test_per_io_rows_carry_job_queue_and_tenant():
    r = ssdlab.run(workload={**SMALL, "numjobs": 2, "iodepth": 4}, keep_ios=True)
    ios = r.ios
    assert list(ios.columns[:3]) == ["job", "queue", "tenant"]
    assert ios.groupby("job", observed=True).size().to_dict() == {j["name"]: j["ios"] for j in r.summary["jobs"]}
    assert sorted(ios["queue"].unique()) == [1, 2] and set(ios["tenant"]) == {"default"}
    t = ssdlab.run("ops-isolation", set={"workload.runtime": "20ms", "tenants": [{"name": "a", "workload": {"rw": "randwrite"}}, {"name": "b", "workload": {"rw": "randread"}}]}, keep_ios=True)
    by = t.ios.groupby(["tenant", "op"], observed=True).size()
    assert set(by.index) == {("a", "write"), ("b", "read")}
    assert by[("a", "write")] == t.summary["tenants"][0]["ios"]


def test_config_forms_agree():
    by_name = ssdlab.load_config("default", workload={"iodepth": 4}, set={"pcie.lanes": 8})
    by_dict = ssdlab.load_config({"extends": "default", "workload": {"iodepth": 4}, "pcie": {"lanes": 8}})
    by_obj = ssdlab.load_config(ssdlab.load_config("default", set={"pcie.lanes": 8}), workload={"iodepth": 4})
    assert by_name.hash == by_dict.hash == by_obj.hash
    assert "lanes = 8" in by_name.toml
    hw = ssdlab.load_config("default-hw")
    assert hw.hash != by_name.hash and "hardware" in hw.description


def test_the_table_is_the_toml_parsed():
    # `Config.table` comes from the core as JSON; it must hold what the TOML text says, key for
    # key and value for value (types included), for every preset and for settings of every kind.
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]

    configs = [ssdlab.load_config(name) for name in ssdlab.presets().index]
    configs.append(ssdlab.load_config("default", workload={"rw": "randrw", "rwmixread": 70, "bssplit": "4k/50:64k/50"}, set={"pcie.lanes": 8, "tenants": [{"name": "a", "weight": 3}]}))
    assert len(configs) > 10
    for cfg in configs:
        table = cfg.table
        assert table == tomllib.loads(cfg.toml), cfg.description
        assert json.dumps(table, sort_keys=True) == json.dumps(tomllib.loads(cfg.toml), sort_keys=True), cfg.description
    # A copy at each call: changing one leaves the config's as it was.
    t = configs[0].table
    t["pcie"]["lanes"] = -1
    assert configs[0].table["pcie"]["lanes"] != -1


def test_presets_table():
    p = ssdlab.presets()
    assert {"default", "default-hw", "dram-polled"} <= set(p.index)
    assert all(p["description"].str.len() > 10)


def test_same_seed_same_results_other_seed_other_results():
    def run(seed):
        s = dict(ssdlab.run(workload={**SMALL, "rw": "randrw", "bssplit": "4k/50:64k/50"}, seed=seed).summary)
        s.pop("wall_time_s")
        return json.dumps(s, sort_keys=True)

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_config_errors_carry_every_problem():
    with pytest.raises(ssdlab.ConfigError) as e:
        ssdlab.run(set={"pcie.lanes": 0, "nvme.queue_depth": 70000, "workload.bs": "1000", "pcie.mps": 100})
    found = {i["path"]: i for i in issues(e.value)}
    assert set(found) == {"pcie.lanes", "nvme.queue_depth", "workload.bs", "pcie.mps"}
    assert found["pcie.lanes"]["value"] == "0" and "one of" in found["pcie.lanes"]["rule"]
    assert isinstance(e.value, ssdlab.SsdlabError)


def test_exception_tree():
    for cls in (ssdlab.ConfigError, ssdlab.WorkloadError, ssdlab.InputError, ssdlab.SimulationError):
        assert issubclass(cls, ssdlab.SsdlabError)
    assert issubclass(ssdlab.SsdlabError, Exception)
    with pytest.raises(ssdlab.ConfigError, match="no preset or file"):
        ssdlab.load_config("no-such-preset")
    with pytest.raises(ssdlab.InputError):
        ssdlab.load_config("missing/file.toml")
    with pytest.raises(ssdlab.ConfigError, match="cannot be expressed in TOML"):
        ssdlab.load_config({"workload": {"iodepth": object()}})


def test_progress_is_reported_and_an_interrupt_stops_the_run_cleanly():
    seen = []
    ssdlab.run(workload={"numjobs": 1, "number_ios": 300_000}, progress=seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)

    def interrupt(_fraction):
        raise KeyboardInterrupt

    # Long enough (about 0.6 s here) that the first progress call, 100 ms in, comes well
    # before the end: at 300,000 I/Os a faster build finished first.
    n = 2_000_000
    cfg = ssdlab.load_config(workload={"numjobs": 1, "number_ios": n})
    sim = _core.Simulation(cfg._native)
    with pytest.raises(KeyboardInterrupt):
        sim.run(interrupt)
    partial = json.loads(sim.summary())
    assert 0 < partial["ios"] < n
    # The same simulation can be resumed to the end.
    assert json.loads(sim.run(None))["ios"] == n


def test_a_two_argument_progress_callback_gets_the_eta():
    calls = []
    ssdlab.run(workload={"numjobs": 1, "number_ios": 300_000}, progress=lambda f, eta: calls.append((f, eta)))
    assert calls[-1] == (1.0, 0.0)
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions)
    assert all(eta is None or eta >= 0 for _, eta in calls)


def test_many_simulations_in_threads():
    from concurrent.futures import ThreadPoolExecutor

    def one(seed):
        s = ssdlab.run(workload={"numjobs": 1, "number_ios": 50_000}, seed=seed).summary
        return s["read"]["latency_us"]["mean"]

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(one, [3, 3])
    assert a == b


def test_timeseries_metrics_and_tenants_are_dataframes() -> None:
    r = ssdlab.run("default", workload={"numjobs": 1, "number_ios": 4000, "rw": "randrw"}, set={"stats.interval": "1ms"})
    ts = r.timeseries
    assert ts is not None and {"start_s", "end_s", "tenant", "ios", "iops", "lat_p99_us", "media.units.busy"} <= set(ts.columns)
    assert ts[ts.tenant == "all"].ios.sum() == r.summary["ios"]
    assert r.metrics["io.ios"] == r.summary["ios"]
    assert list(r.tenants.index) == ["default"] and r.tenants.loc["default", "ios"] == r.summary["ios"]
    assert ssdlab.run("default", workload={"numjobs": 1, "number_ios": 100}).timeseries is None


def test_timeseries_plot_has_a_panel_per_column_and_shades_the_steady_window(tmp_path) -> None:
    r = ssdlab.run("ops-isolation", workload={"number_ios": 6000}, set={"stats.interval": "50ms", "stats.steady_metric": "ftl.waf"})
    fig = ssdlab.plot_timeseries(r, tmp_path / "gc.png")
    assert (tmp_path / "gc.png").stat().st_size > 10_000
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels == ["IOPS", "p99 latency (us)", "WAF (interval)", "free blocks", "GC units moved"]
    if r.summary["steady_state"]["reached"]:
        assert all(ax.patches for ax in fig.axes), "the PTS window is shaded"
    fig = ssdlab.plot_timeseries(r, tmp_path / "iops.svg", columns=["iops"])
    assert len(fig.axes) == 1 and (tmp_path / "iops.svg").exists()
    with pytest.raises(ssdlab.ConfigError, match="columns = nope"):
        ssdlab.plot_timeseries(r, columns=["nope"])
    with pytest.raises(ssdlab.ConfigError, match="stats.interval"):
        ssdlab.plot_timeseries(ssdlab.run("default", workload=SMALL))
    with pytest.raises(ssdlab.ConfigError, match="png or .svg"):
        ssdlab.plot_timeseries(r, tmp_path / "gc.pdf")


def test_metrics_describe_every_name_a_run_reports() -> None:
    m = ssdlab.metrics("tlc")
    assert {"unit", "kind", "description"} <= set(m.columns)
    assert m.loc["ftl.gc.victims", "kind"] == "counter" and m.loc["ftl.free_blocks", "kind"] == "gauge"
    r = ssdlab.run("tlc", workload={"number_ios": 300})
    assert set(m.index) <= set(r.metrics)


def test_a_core_workload_error_carries_its_issue() -> None:
    with pytest.raises(ssdlab.WorkloadError) as e:
        ssdlab.run("default", workload={"numjobs": 1, "rate_iops": 10_000_000, "runtime": "2s", "number_ios": 100_000_000})
    (issue,) = ssdlab.exceptions.issues(e.value)
    assert issue["path"] == "workload.rate_iops" and issue["value"] == "10000000" and "cannot sustain" in issue["rule"]


def test_misuse_of_the_api_is_a_config_error_naming_the_argument():
    # Issue 16: a seed that is not a whole number, a workload that is not a table, and config
    # trees that contain themselves or nest without end are refused with the argument named.
    with pytest.raises(ssdlab.ConfigError, match="seed = 1.5: must be a whole number"):
        ssdlab.load_config("default", seed=1.5)
    with pytest.raises(ssdlab.ConfigError, match="workload = 'randread': must be a table of fio keys"):
        ssdlab.load_config("default", workload="randread")
    loop: dict = {"workload": {}}
    loop["workload"]["jobs"] = loop
    with pytest.raises(ssdlab.ConfigError, match="contains itself"):
        ssdlab.load_config(loop)
    deep: dict = {}
    node = deep
    for _ in range(30000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(ssdlab.ConfigError, match="nests more than 32 levels deep"):
        ssdlab.load_config(deep)


def test_a_huge_value_is_not_echoed_back_whole():
    with pytest.raises(ssdlab.ConfigError) as e:
        ssdlab.load_config("default", set={"pcie.lanes": "x" * 10_000_000})
    assert len(str(e.value)) < 2000 and "(10000002 bytes)" in str(e.value)


def test_lone_surrogates_and_wrong_types_are_ssdlab_errors(tmp_path):
    # Issue 16: misuse raised TypeError, ValueError, OverflowError or UnicodeEncodeError.
    from ssdlab import api, ats, trace

    s = "\ud800"
    t = tmp_path / "t.csv"
    t.write_text("addr\n0x1000\n")
    cases = [
        lambda: ssdlab.load_config("default", workload={"rw": s}),
        lambda: ssdlab.load_config("default", set={s: 1}),
        lambda: ssdlab.load_config({"extends": s}),
        lambda: ssdlab.load_config(s),
        lambda: ssdlab.load_config(5),
        lambda: ssdlab.load_config(settings=[("pcie.lanes", s)]),
        lambda: ssdlab.load_config(settings="pcie.lanes=8"),
        lambda: ssdlab.run("default", keep_ios="yes"),
        lambda: ssdlab.run("default", progress=5),
        lambda: ssdlab.metrics(s),
        lambda: ssdlab.decompose(media="tlc"),
        lambda: ssdlab.decompose(ios="many"),
        lambda: ssdlab.plot_decomposition(5),
        lambda: ssdlab.plot_timeseries(5),
        lambda: ssdlab.open_store(5),
        lambda: api.load_jobfile(s),
        lambda: trace.stats(s),
        lambda: trace.stats(5),
        lambda: trace.stats(str(t), s),
        lambda: trace.stats(str(t), devices=-1),
        lambda: trace.read(str(t), blk_action=s),
        lambda: ats.study(str(t), lines=5),
        lambda: ats.study(str(t), policies=[s]),
        lambda: ats.study(str(t), seed=-1),
        lambda: ats.study(str(t), pins=[(1,)]),
        lambda: ats.study(str(t), skip_bad="yes"),
        lambda: ats.study(synth={"stack": s}),
        lambda: ats.study(synth={"stack": "spdk", "ios": -1}),
        lambda: ats.study(synth={1: 1}),
        lambda: ats.study(synth=5),
        lambda: ats.write_synth(str(tmp_path / "s.csv"), {"stack": "spdk", "queues": "four"}),
    ]
    for case in cases:
        with pytest.raises(ssdlab.SsdlabError):
            case()
    with pytest.raises(ssdlab.ConfigError) as e:
        ssdlab.load_config("default", workload={"rw": s})
    (issue,) = ssdlab.exceptions.issues(e.value)
    assert issue["path"] == "workload.rw" and issue["value"] == repr(s) and "lone surrogate" in issue["rule"]
    assert not list(tmp_path.glob("s.csv*"))


def test_every_public_function_refuses_misuse_with_an_ssdlab_error(tmp_path):
    # Issue 29, item 8: load_jobfile(settings=[[k, v]]) raised TypeError though run accepts
    # lists; trace.stats(strict=0), load_jobfile(text=0) and sweep(executor=0) raised TypeError
    # or AttributeError. Each argument of each public function, given the wrong kind of value.
    import inspect
    import warnings

    from ssdlab import ats, trace

    tr = tmp_path / "t.csv"  # MSR Cambridge's format
    tr.write_text("128166372003061629,hm,0,Read,383496192,32768,1001\n128166372013061629,hm,0,Write,4096,4096,900\n")
    dma = tmp_path / "dma.txt"
    dma.write_text("".join(f"{hex(a << 12)}\n" for a in range(50)))
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randread\nsize=1m\nnumber_ios=10\n")
    calls = {
        "run": (ssdlab.run, ("p4800x",), {"workload": {"number_ios": 10}}),
        "load_config": (ssdlab.load_config, ("p4800x",), {}),
        "load_jobfile": (ssdlab.api.load_jobfile, (str(job), "tlc"), {}),
        "metrics": (ssdlab.metrics, ("p4800x",), {}),
        "decompose": (ssdlab.decompose, ("p4800x",), {"ios": 10}),
        "sweep": (ssdlab.sweep, ({"name": "q", "base": "p4800x", "set": {"workload.number_ios": 10}},), {"store": str(tmp_path / "s"), "executor": "serial"}),
        "open_store": (ssdlab.open_store, (str(tmp_path / "s"),), {}),
        "trace.stats": (trace.stats, (str(tr),), {}),
        "trace.read": (trace.read, (str(tr),), {}),
        "trace.convert": (trace.convert, (str(tr), str(tmp_path / "t.parquet")), {}),
        "trace.batches": (trace.batches, (str(tr),), {}),
        "ats.study": (ats.study, (str(dma),), {"lines": [1, 2]}),
    }
    bad_values = [0, 1.5, True, [], {}, object(), b"x", "\ud800", -1, [[1, 2]]]
    wrong = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (fn, args, kw) in calls.items():
            got = fn(*args, **kw)  # the call as given works: each failure below is the bad value's
            if name == "trace.batches":
                assert sum(b.num_rows for b in got) == 2
            for i, p in enumerate(inspect.signature(fn).parameters.values()):
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    continue  # a name no function takes is Python's TypeError
                for bad in bad_values:
                    a, k = list(args), dict(kw)
                    if i < len(a):
                        a[i] = bad
                    else:
                        k[p.name] = bad
                    try:
                        fn(*a, **k)
                    except ssdlab.SsdlabError:
                        pass
                    except Exception as e:  # noqa: BLE001 - what the test looks for
                        wrong.append(f"{name}({p.name}={bad!r}): {type(e).__name__}: {e}")
    assert not wrong, "\n".join(wrong[:20])
    # What one function takes, its siblings take: pairs as lists as well as tuples.
    plan = ssdlab.api.load_jobfile(str(job), "tlc", settings=[["workload.number_ios", "7"]])
    assert plan.run()[0].summary["ios"] == 7
    assert {j["ios"] for j in ssdlab.run("p4800x", settings=[["workload.number_ios", "7"]]).summary["jobs"]} == {7}


def test_ageing_reports_progress(tmp_path):
    # Issue 29, item 7: on tlc-aged the first callback came at 15.4 s of a 17.2 s run (ageing
    # was silent). Ageing is the first half of the fraction; the run the second.
    seen = []
    ssdlab.run("tlc-aged", set={"workload.number_ios": 2000}, progress=seen.append)
    ageing = [f for f in seen if f < 0.5]
    assert len(ageing) >= 5 and ageing[-1] > 0.3, seen[:10]
    assert seen == sorted(seen) and seen[-1] == 1.0
    # A callback that raises stops the ageing with its exception.
    def stop(f):
        if f > 0.05:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        ssdlab.run("tlc-aged", set={"workload.number_ios": 2000}, progress=stop)
