"""Tenants from Python and the command line: per-tenant results as DataFrames, the isolation
study with its figure, and bad tenant input that exits 2."""

import json

import pytest

import ssdlab
from ssdlab import isolation

from test_cli import no_traceback

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
