"""ssdlab atc: outputs, plots, inputs and bad input."""

import json

import pytest

from ssdlab import ats
from ssdlab.exceptions import ConfigError, TraceError


def test_atc_json_document(cli):
    p = cli("atc", "--synth", "linux-direct", "--ios", "20000", "--stu", "4k,2m", "--lines", "1-256", "--policy", "lru,fifo", "--assoc", "full,4", "--pin-rings", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert set(doc) >= {"points", "wall_s", "accesses"}
    pt = doc["points"][0]
    assert set(pt) >= {"stu_bytes", "policy", "sets", "ways", "lines", "pinned", "accesses", "hits", "hit_rate"}
    assert {p["stu_bytes"] for p in doc["points"]} == {4096, 2 << 20}
    assert {p["policy"] for p in doc["points"]} == {"lru", "fifo"}
    assert any(p["pinned"] for p in doc["points"]) and any(not p["pinned"] for p in doc["points"])
    for p in doc["points"]:
        assert p["hits"] <= p["accesses"] == doc["accesses"]


def test_the_printed_table_is_the_pivot_of_the_points(cli):
    # `ssdlab atc` prints its table without pandas; it must show what a pandas pivot of the
    # points shows: per STU, a row per size, a column per series in name order, the mean hit rate.
    r = ats.study(synth={"stack": "linux-direct", "ios": 5000}, stu=["4k", "2m"], policies=["lru", "fifo", "random"], assoc=["full", 4, 2], lines="1-1024", pin_rings=True)
    # A cache of one set is named `full` whatever its ways, so a 4-way cache of 4 lines and a
    # fully associative one share a cell: both show their mean.
    tables = ats.series_by_stu(r.points)
    df = r.frame
    df = df.assign(series=[f"{p} {'full' if s == 1 else str(w) + '-way'}{' pin' if pin else ''}" for p, s, w, pin in zip(df.policy, df.sets, df.ways, df.pinned)])
    assert sorted(tables) == sorted(df.stu_bytes.unique())
    for stu, d in df.groupby("stu_bytes", sort=True):
        pivot = d.pivot_table(index="lines", columns="series", values="hit_rate")
        rows = tables[int(stu)]
        assert sorted(rows) == list(pivot.index)
        assert sorted({n for row in rows.values() for n in row}) == list(pivot.columns)
        for lines_, row in pivot.iterrows():
            shown = {n: v for n, v in row.items() if v == v}
            assert rows[int(lines_)] == pytest.approx(shown, abs=1e-12)
    # And the command prints it: one table per STU with every series as a column.
    p = cli("atc", "--synth", "linux-direct", "--ios", "5000", "--stu", "4k,2m", "--lines", "1-16", "--policy", "lru,fifo", "--assoc", "full,4")
    assert p.returncode == 0, p.stderr
    assert "Hit rate, STU 4 KiB" in p.stdout and "Hit rate, STU 2 MiB" in p.stdout
    assert all(name in p.stdout for name in ("lru full", "lru 4-way", "fifo full", "fifo 4-way"))


def test_seed_findings_and_plot(tmp_path, cli):
    png = tmp_path / "atc.png"
    svg = tmp_path / "atc.svg"
    csv = tmp_path / "atc.csv"
    args = ["atc", "--synth", "linux-direct", "--ios", "100000", "--stu", "2m", "--lines", "1-128", "--pin-rings", "--pin-dedicated", "--assoc", "full"]
    p = cli(*args, "--plot", str(png), "-o", str(csv))
    assert p.returncode == 0, p.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli(*args, "--plot", str(svg)).returncode == 0 and b"<svg" in svg.read_bytes()[:400]
    import pandas as pd

    df = pd.read_csv(csv)
    at = lambda lines, pinned, policy="lru": df.query("lines == @lines and pinned == @pinned and policy == @policy").hit_rate.iloc[0]  # noqa: E731
    assert at(1, False) < 0.10 and at(1, True) > 0.6
    assert at(64, False) > 0.99
    assert abs(at(32, True, "lru") - at(32, True, "random")) < 0.01


def test_trace_formats_agree(tmp_path):
    synth = {"ios": 5000, "queues": 2}
    text = tmp_path / "t.csv"
    n = ats.write_synth(str(text), synth)
    assert n == 15000  # SQE, data page, CQE per 4 KiB command
    via_synth = ats.study(synth=synth, stu=["4k"], policies=["lru"], assoc=["full"], lines="1-256").points
    via_text = ats.study(str(text), stu=["4k"], policies=["lru"], assoc=["full"], lines="1-256").points
    assert via_text == via_synth
    # Raw and Parquet carry addresses only; a synthesised stream with one page per lookup and
    # no PASIDs is the same stream.
    import numpy as np
    import pandas as pd

    addrs = pd.read_csv(text)["addr"].map(lambda a: int(a, 16)).to_numpy(dtype=np.uint64)
    raw = tmp_path / "t.bin"
    raw.write_bytes(addrs.astype("<u8").tobytes())
    pq = tmp_path / "t.parquet"
    pd.DataFrame({"addr": addrs}).to_parquet(pq)
    a = ats.study(str(raw), stu=["2m"], policies=["lru"], assoc=["full"], lines="1-64").points
    b = ats.study(str(pq), stu=["2m"], policies=["lru"], assoc=["full"], lines="1-64").points
    assert a == b and a[0]["accesses"] == len(addrs)


def test_bad_traces_and_studies_exit_2(tmp_path, cli):
    bad = tmp_path / "bad.csv"
    bad.write_text("addr\n0x1000\n0x2000\nnot-an-address\n0x3000\n")
    p = cli("atc", str(bad), "--lines", "1-4")
    assert p.returncode == 2 and f"{bad}:4" in p.stderr and "not-an-address" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    p = cli("atc", str(bad), "--lines", "1-4", "--skip-bad", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["skipped_lines"] == 1
    raw = tmp_path / "odd.bin"
    raw.write_bytes(b"\x00" * 12)
    p = cli("atc", str(raw))
    assert p.returncode == 2 and "trailing bytes" in p.stderr
    empty = tmp_path / "empty.csv"
    empty.write_text("# nothing\n")
    p = cli("atc", str(empty))
    assert p.returncode == 2 and "no accesses" in p.stderr
    for args, needle in [
        (["--assoc", "4", "--lines", "12"], "lines = 12"),
        (["--stu", "3k"], "stu"),
        (["--policy", "mru"], "unknown policy"),
        (["--pin", "0x2000-0x1000"], "pin"),
        (["--pin", "0-0x100000", "--lines", "1-8"], "exceed every cache size"),
        (["--plot", "x.gif"], "png or .svg"),
    ]:
        p = cli("atc", str(bad), "--skip-bad", *args)
        assert p.returncode == 2 and needle in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr
    assert cli("atc").returncode == 2
    assert cli("atc", "missing.csv").returncode == 2


def test_api_errors_are_typed(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("0x10\nzz\n")
    with pytest.raises(TraceError, match=r"bad.csv:2"):
        ats.study(str(bad), lines="1-4")
    with pytest.raises(ConfigError):
        ats.study(synth={"ios": 10}, lines="0")
    assert ats.parse_stu("2MiB") == 9 and ats.parse_stu("4k") == 0 and ats.parse_stu(9) == 9
    assert ats.parse_lines("1-16,48") == [1, 2, 4, 8, 16, 48]


def test_from_sim_and_record_give_the_same_stream(tmp_path, cli):
    cfg = tmp_path / "c.toml"
    cfg.write_text('extends = "default"\n[workload]\nnumjobs = 2\nnumber_ios = 5000\n')
    common = ["--stu", "2m", "--lines", "1-64", "--assoc", "full", "--policy", "lru,fifo"]
    p = cli("atc", "--from-sim", str(cfg), *common, "--pin-rings", "--json")
    assert p.returncode == 0, p.stderr
    from_sim = json.loads(p.stdout)
    assert from_sim["accesses"] == 2 * 5000 * 3  # SQE, data page, CQE per 4 KiB read
    rec = tmp_path / "rec.csv"
    p = cli("atc", "record", str(cfg), "-o", str(rec))
    assert p.returncode == 0 and "10,000" not in p.stderr, p.stderr
    assert len(rec.read_text().splitlines()) == 30001
    p = cli("atc", str(rec), *common, "--pin-tagged", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["points"] == from_sim["points"]
    assert cli("atc", "record", str(cfg)).returncode == 2  # no -o


def test_run_reports_the_in_device_atc(cli):
    p = cli("run", "--json", "-w", "numjobs=1", "-w", "iodepth=1", "-w", "number_ios=3000", "--set", "ats.enabled=true", "--set", "ats.lines=1", "--set", "ats.pin_rings=false")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["ats"]["misses_per_io"] > 1.9 and s["breakdown_us"]["translation"] > 0.8
    p = cli("run", "--set", "ats.enabled=true", "--set", "ats.ways=3")
    assert p.returncode == 2 and "ats.ways" in p.stderr


def test_invalid_utf8_in_a_trace_names_its_line_and_skip_bad_skips_it(tmp_path, cli):
    # Issue 16: no line number, and --skip-bad did not skip it.
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"addr\n0x1000\n0x20\xff00\n0x3000\n")
    p = cli("atc", str(bad), "--lines", "1-4")
    assert p.returncode == 2 and f"{bad}:3" in p.stderr and "invalid UTF-8" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    p = cli("atc", str(bad), "--lines", "1-4", "--skip-bad", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["skipped_lines"] == 1, p.stderr
