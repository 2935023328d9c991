"""Tenants from Python and the command line: per-tenant results as DataFrames, the isolation
study with its figure, and bad tenant input that exits 2."""

import json

import pytest

import ssdlab
from ssdlab import isolation

from test_cli import no_traceback

# Most tenants here carry weights that only their reports read (weight_ratio): the advice that
# nothing enforces them is checked by its own test.
pytestmark = pytest.mark.filterwarnings("ignore::ssdlab.exceptions.ConfigWarning")

TWO = [
    {"name": "small", "weight": 1, "workload": {"rw": "randwrite", "iodepth": 32}},
    {"name": "big", "weight": 3, "workload": {"rw": "randwrite", "iodepth": 32}},
]


def seed003(**ftl):
    return {"extends": "ops-isolation", "workload": {"runtime": "1s"}, "ftl": {"precondition": "clean", **ftl}, "tenants": TWO}


def test_tenant_dataframe_has_weights_proportionality_and_gc_attribution():
    cfg = seed003(precondition="aged")
    cfg["host"] = {"share": "weight", "cost_wrandiops": 8865, "cost_wseqiops": 8865, "cost_wbps": "36.3MB/s"}
    df = ssdlab.run(cfg).tenants
    assert list(df.index) == ["small", "big"]
    for col in ("weight", "class", "weight_ratio", "proportionality", "waf", "gc_paid_own", "gc_paid_others", "own_fraction"):
        assert col in df.columns, col
    assert df.loc["big", "weight_ratio"] == 3.0
    # One shared pool: each tenant's GC moves the other's pages too.
    assert (df["gc_paid_others"] > 0).all()


def test_slo_compliance_is_reported_per_interval():
    cfg = seed003()
    cfg["stats"] = {"interval": "100ms"}
    cfg["tenants"] = [dict(TWO[0], slo_iops=1), dict(TWO[1], slo_latency="1us")]
    r = ssdlab.run(cfg)
    df = r.tenants
    assert df.loc["small", "slo_iops_compliance"] == 1.0
    assert df.loc["big", "slo_latency_compliance"] == 0.0
    ts = r.timeseries
    assert set(ts["tenant"]) == {"small", "big", "all"}


def test_isolation_study_rows_and_figure(tmp_path):
    df = isolation.study(weights=(1, 2), runtime="300ms", cases=["clean"])
    assert set(df["case"]) == {"clean"} and list(df["tenant"]) == ["vm1", "vm2"]
    assert df["proportionality"].iloc[1] == pytest.approx(2.0, rel=0.1)
    path = tmp_path / "iso.svg"
    isolation.plot(df, str(path))
    assert path.read_text().startswith("<?xml")


def test_isolation_cli_json_and_bad_input(cli, tmp_path):
    p = cli("isolation", "--case", "clean", "--weights", "1,3", "--runtime", "200ms", "--json", "--plot", str(tmp_path / "f.png"))
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["weight"] for r in rows] == [1, 3]
    assert (tmp_path / "f.png").stat().st_size > 1000
    for args in (("--weights", "1,x"), ("--weights", "0,1"), ("--case", "nope"), ("--plot", "f.gif"), ("--plot", "no/dir/f.png")):
        q = cli("isolation", *args)
        assert q.returncode == 2, (args, q.stderr)
        no_traceback(q)


def test_bad_tenant_config_exits_2_naming_the_key(cli, tmp_path):
    f = tmp_path / "t.toml"
    f.write_text('[[tenants]]\nweight = 0\n[[tenants]]\nname = "b"\nclass = "top"\n[tenants.workload]\nrw = "sideways"\n')
    p = cli("run", str(f))
    assert p.returncode == 2
    no_traceback(p)
    for key in ("tenants[0].weight", "tenants[1].class", "tenants[1].workload.rw"):
        assert key in p.stderr, p.stderr


def test_weights_that_nothing_enforces_are_a_warning_naming_host_share(cli, tmp_path):
    # Issue 29, item 4: weights with host.share left at "none" were silently equal shares.
    quick = {"extends": "dram", "workload": {"number_ios": 200}, "tenants": [dict(t, workload={"rw": "randread"}) for t in TWO]}
    with pytest.warns(ssdlab.ConfigWarning, match=r'host\.share = "none": the tenants\' weights \(small = 1, big = 3\) are enforced by nothing'):
        ssdlab.run(quick)
    assert ssdlab.load_config(quick).advisories[0]["path"] == "host.share"
    # Enforced by the host's share, or by the spare-space split: no advice.
    assert ssdlab.load_config({**quick, "host": {"share": "weight"}}).advisories == []
    split = {**seed003(pools="isolated", ops_split="weight"), "workload": {"number_ios": 200}}
    assert ssdlab.load_config(split).advisories == []
    fair = {**seed003(pools="isolated"), "workload": {"number_ios": 200}, "media": {"nand": {"tenant_fair": True}}}
    assert ssdlab.load_config(fair).advisories == []
    # io.max caps bandwidth and ignores weights: the advice stands.
    assert ssdlab.load_config({**quick, "host": {"share": "max"}}).advisories[0]["path"] == "host.share"
    equal = {**quick, "tenants": [dict(t, weight=5) for t in quick["tenants"]]}
    assert ssdlab.load_config(equal).advisories == []
    # The command line prints it as a warning and runs.
    f = tmp_path / "t.toml"
    f.write_text('extends = "dram"\n[workload]\nnumber_ios = 200\n[[tenants]]\nname = "a"\nweight = 1\n[[tenants]]\nname = "b"\nweight = 4\n')
    p = cli("run", str(f))
    assert p.returncode == 0, p.stderr
    assert 'warning: host.share = "none": the tenants\' weights (a = 1, b = 4) are enforced by nothing' in " ".join(p.stderr.split()), p.stderr
    no_traceback(p)
