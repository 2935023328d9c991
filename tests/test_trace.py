"""`ssdlab trace`: stats and conversion on the real samples in ../shared/data/traces (read in
place), the Python API, and bad input."""

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from ssdlab import trace

from conftest import SHARED

TRACES = SHARED / "data" / "traces"
SAMPLES = {
    "mqsim_tpcc-small.trace": ("mqsim", 6999),
    "mqsim_wsrch-small.trace": ("mqsim", 24783),
    "msr-cambridge1-sample.csv": ("msr", 1000),
    "tencent-cbs-cloud_storage-sample.bz2": ("tencent", 50000),
    "blkparse-nvme0n1.blktrace.txt": ("blkparse", 119),  # 142 issues: 119 writes and 23 flushes
    "fio-3.33-randrw-v3.iolog": ("fio-v3", 2000),
    "fio-v2-handwritten.iolog": ("fio-v2", 4),
}
needs_traces = pytest.mark.shared("data/traces")


@needs_traces
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_stats_on_every_sample(cli, name):
    fmt, ios = SAMPLES[name]
    p = cli("trace", "stats", str(TRACES / name), "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert (s["format"], s["ios"]) == (fmt, ios)
    assert s["bad_lines"] == 0 and sum(b["count"] for b in s["size_histogram"]) == s["ios"]
    assert 0 < s["footprint_bytes"] <= s["bytes_read"] + s["bytes_written"] + s["bytes_trimmed"] + 4096 * s["ios"]
    table = cli("trace", "stats", str(TRACES / name))
    assert table.returncode == 0 and "Request sizes" in table.stdout


@needs_traces
def test_convert_to_parquet_and_back(cli, tmp_path):
    out = tmp_path / "t.parquet"
    p = cli("trace", "convert", str(TRACES / "msr-cambridge1-sample.csv"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    t = pq.read_table(out)
    assert t.num_rows == 1000 and t.column_names == ["time_ns", "op", "offset", "len", "dev"]
    # Times from the first record (pandas-safe int64); the origin and the names in the metadata.
    first = t.slice(0, 1).to_pylist()[0]
    assert first == {"time_ns": 0, "op": "write", "offset": 9056014336, "len": 2048, "dev": "hm_0"}
    meta = json.loads(pq.read_metadata(out).metadata[b"ssdlab.trace"])
    # Issue 29, item 11: the metadata shows through pyarrow's schema and pandas' attrs.
    assert json.loads(t.schema.metadata[b"ssdlab.trace"]) == meta
    assert pd.read_parquet(out).attrs["ssdlab.trace"] == meta
    assert meta["schema_version"] == trace.SCHEMA_VERSION and meta["time_origin_ns"] == 128166385295514663 * 100
    assert meta["format"] == "msr" and meta["devices"] == ["hm_0"] and meta["records"] == 1000
    assert t.to_pandas()["time_ns"].is_monotonic_increasing
    # The Python API reads the same records, from the text and from the Parquet.
    for source in (TRACES / "msr-cambridge1-sample.csv", out):
        r = trace.read(source)
        assert r.schema.remove_metadata() == trace.schema() and r.to_pydict() == t.to_pydict()
        assert json.loads(r.schema.metadata[b"ssdlab.trace"])["time_origin_ns"] == meta["time_origin_ns"]


@needs_traces
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_parquet_round_trip_gives_the_same_stats_and_replay(cli, tmp_path, name):
    out = tmp_path / f"{name}.parquet"
    assert cli("trace", "convert", str(TRACES / name), "-o", str(out)).returncode == 0
    stats = []
    for src in (TRACES / name, out):
        p = cli("trace", "stats", str(src), "--json")
        assert p.returncode == 0, p.stderr
        stats.append({k: v for k, v in json.loads(p.stdout).items() if k not in ("format", "lines", "wall_s")})
    assert stats[0] == stats[1]
    runs = []
    for src in (TRACES / name, out):
        p = cli("run", "tlc", "--replay", str(src), "--replay-mode", "qd", "-w", "iodepth=8", "--json")
        assert p.returncode == 0, p.stderr
        s = json.loads(p.stdout)
        runs.append((s["read"], s["write"], s["breakdown_us"], {k: v for k, v in s["replay"].items() if k not in ("trace", "format", "lines")}))
    assert runs[0] == runs[1]


@needs_traces
def test_xz_and_zstd_traces_read_like_plain_ones(cli, tmp_path):
    import lzma

    import pyarrow as pa

    raw = (TRACES / "msr-cambridge1-sample.csv").read_bytes()
    (tmp_path / "t.csv.xz").write_bytes(lzma.compress(raw))
    (tmp_path / "t.csv.zst").write_bytes(pa.compress(raw, codec="zstd", asbytes=True))
    want = trace.read(TRACES / "msr-cambridge1-sample.csv")
    for name in ("t.csv.xz", "t.csv.zst"):
        got = trace.read(tmp_path / name)
        assert got.equals(want), name
        p = cli("trace", "stats", str(tmp_path / name), "--json")
        assert p.returncode == 0 and json.loads(p.stdout)["ios"] == 1000, p.stderr


@needs_traces
def test_a_parquet_file_that_is_not_a_trace_is_a_clear_error(cli, tmp_path):
    import pyarrow as pa

    bad = tmp_path / "other.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), bad)
    p = cli("trace", "stats", str(bad))
    assert p.returncode == 2 and "no column \"time_ns\"" in p.stderr and "Traceback" not in p.stderr, p.stderr
    p = cli("trace", "stats", str(TRACES / "msr-cambridge1-sample.csv"), "--format", "parquet")
    assert p.returncode == 2 and "not Parquet" in p.stderr, p.stderr


def test_bad_traces_exit_2_with_file_line(cli, tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("1 0 8 8 1\n2 0 8 8 7\n3 0 16 8 0\n")
    p = cli("trace", "stats", str(bad), "--format", "mqsim")
    assert p.returncode == 2 and f"{bad}:2" in p.stderr and "type \"7\"" in p.stderr, p.stderr
    p = cli("trace", "stats", str(bad), "--format", "mqsim", "--lenient", "--json")
    s = json.loads(p.stdout)
    assert p.returncode == 0 and s["ios"] == 2 and s["bad_lines"] == 1 and s["first_bad"].startswith(f"{bad}:2")
    for args in (["--format", "nope"], ["--blk-action", "dd"]):
        p = cli("trace", "stats", str(bad), *args)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    p = cli("trace", "stats", str(junk))
    assert p.returncode == 2 and "junk.txt:1" in p.stderr
    p = cli("trace", "stats", str(tmp_path / "missing.csv"))
    assert p.returncode == 2 and "missing.csv" in p.stderr
    p = cli("trace", "convert", str(bad), "-o", str(tmp_path / "x.csv"))
    assert p.returncode == 2
    p = cli("trace", "convert", str(bad), "--format", "mqsim", "-o", str(tmp_path / "x.parquet"))
    assert p.returncode == 2 and not (tmp_path / "x.parquet").exists() and not (tmp_path / "x.parquet.partial").exists()


@needs_traces
def test_replay_from_the_command_line(cli, tmp_path):
    p = cli("run", "--replay", str(TRACES / "fio-3.33-randrw-v3.iolog"), "--replay-mode", "qd", "-w", "iodepth=8", "-w", "numjobs=1", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["replay"]["issued"] == 2000 and s["replay"]["format"] == "fio-v3"
    assert (s["read"]["ios"], s["write"]["ios"]) == (1395, 605)
    bad = tmp_path / "bad.trace"
    bad.write_text("1 0 8 8 1\n2 0 8 8 9\n")
    p = cli("run", "--replay", str(bad), "--set", 'workload.replay.format="mqsim"')
    assert p.returncode == 2 and f"{bad}:2" in p.stderr and "Traceback" not in p.stderr, p.stderr
    p = cli("run", "--replay-mode", "qd")
    assert p.returncode == 2


# No public sample exists for these (../shared/data/traces/README.md); their documented example
# lines (FORMATS.md) stand in.
DOCUMENTED = {
    "spc": ("0,20941264,8192,W,0.551706,Alpha/NT\n1,3436288,15872,W,1.250720,0x123,5.99,test\n0,303567,3584,r,1.5\n", 3, 2),
    "fiu": ("89968195792462 20782 gzip 283193184 8 R 6 0 56f11b711d91a065a2b6458eca924523\n89968195800000 20782 gzip 283193192 8 W 6 0 aa\n", 2, 1),
    "alibaba": ("device_id,opcode,offset,length,timestmap\n0,R,126703661056,4096,1577808000000046\n1,W,4096,8192,1577808000000100\n", 2, 2),
    "disksim": ("12.504000 0 1032 16 1\n13.000000 0 1048 16 0\n", 2, 1),
}


@pytest.mark.parametrize("fmt", sorted(DOCUMENTED))
def test_stats_on_documented_lines(cli, tmp_path, fmt):
    body, ios, devices = DOCUMENTED[fmt]
    f = tmp_path / f"{fmt}.txt"
    f.write_text(body)
    p = cli("trace", "stats", str(f), "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert (s["format"], s["ios"], s["devices"]) == (fmt, ios, devices)
