"""One parser of sizes and times, the core's: the config convention and fio's, from Python."""

import pytest

import ssdlab
from ssdlab import _core, ats, fiojob


@pytest.mark.parametrize("text, config, fio", [
    ("4096", 4096, 4096),
    ("4k", 4096, 4096),
    ("4K", 4096, 4096),
    ("4KiB", 4096, 4096),
    ("4kB", 4000, 4096),
    ("4KB", 4000, 4096),
    ("1M", 1 << 20, 1 << 20),
    ("1MB", 1_000_000, 1 << 20),
    ("1.5GiB", 3 << 29, 3 << 29),
    ("2g", 2 << 30, 2 << 30),
    (" 8 KiB ", 8192, 8192),
])
def test_config_and_fio_conventions(text, config, fio):
    assert _core.parse_size(text) == config
    assert _core.parse_size(text, fio=True) == fio


def test_fio_reads_every_case_and_spelling_of_a_prefix_alike():
    for text in ("4kb", "4Kb", "4kib", "4KIB"):
        assert _core.parse_size(text, fio=True) == 4096
    for text in ("4kb", "4KIB"):
        with pytest.raises(ValueError, match="unknown size unit"):
            _core.parse_size(text)


@pytest.mark.parametrize("text", ["10q", "", "k", "-4k", "0.5", "4 furlongs", "1e3"])
def test_bad_sizes_are_value_errors_naming_the_unit_or_number(text):
    for fio in (False, True):
        with pytest.raises(ValueError) as e:
            _core.parse_size(text, fio=fio)
        assert str(e.value)


def test_times():
    assert _core.parse_time("48ns") == 48_000 and _core.parse_time("1.5us") == 1_500_000 and _core.parse_time("0") == 0
    with pytest.raises(ValueError, match="needs a unit"):
        _core.parse_time("5")
    assert _core.parse_time("60", fio=True) == 60 * 10**12
    assert _core.parse_time("50", fio=True, fio_unit="us") == 50 * 10**6
    assert _core.parse_time("2m", fio=True) == 120 * 10**12 and _core.parse_time("10MSEC", fio=True) == 10**10
    with pytest.raises(ValueError, match='unknown time unit "x"'):
        _core.parse_time("5x", fio=True)
    with pytest.raises(ValueError, match="fio_unit"):
        _core.parse_time("5", fio=True, fio_unit="fortnights")


def test_wrappers_name_the_value_and_where_it_came_from():
    assert fiojob.parse_size("4KiB", "j.fio:3", "bs") == 4096
    with pytest.raises(ssdlab.WorkloadError, match=r"^j.fio:3: bs='4q': not a size: unknown size unit \"q\""):
        fiojob.parse_size("4q", "j.fio:3", "bs")
    assert fiojob.parse_time("1.5", "j.fio:4", "thinktime", unit="us") == 1_500_000
    with pytest.raises(ssdlab.WorkloadError, match=r"^j.fio:4: runtime='1y': not a time"):
        fiojob.parse_time("1y", "j.fio:4", "runtime")
    assert ats.parse_size("4kB", "bs") == 4000
    with pytest.raises(ssdlab.ConfigError, match=r"bs = 4q: a size such as 4k or 4096: unknown size unit"):
        ats.parse_size("4q", "bs")
    with pytest.raises(ssdlab.ConfigError, match=r"stu = 2MB: an STU size is 4 KiB times a power of two"):
        ats.parse_stu("2MB")
    assert ats.parse_stu("2MiB") == ats.parse_stu("2m") == 9


def test_command_line_sizes_use_the_config_convention(cli):
    p = cli("atc", "--synth", "linux-direct", "--ios", "100", "--bs", "4q", "--lines", "1-4", "--stu", "4k")
    assert p.returncode == 2 and "bs = 4q" in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("text, fio", [("4k", 4096), ("4kB", 4096), ("4KB", 4096), ("4KiB", 4096), ("8kb", 8192), ("1MB", 1 << 20)])
def test_w_and_a_job_file_read_a_size_alike(cli, tmp_path, text, fio):
    import json

    job = tmp_path / "j.fio"
    job.write_text(f"[j]\nrw=randread\nbs={text}\nnumber_ios=20\n")
    p = cli("run", "default", "-w", f"bs={text}", "-w", "number_ios=20", "-w", "rw=randread", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["read"]
    j = cli("run", str(job), "--device", "default", "--json")  # fio's JSON layout
    assert j.returncode == 0, j.stderr
    fr = json.loads(j.stdout)["jobs"][0]["read"]
    assert r["bytes"] / r["ios"] == fr["io_bytes"] / fr["total_ios"] == fio


def test_w_sizes_in_bssplit_offset_and_skip_are_fio_units(cli):
    import json

    p = cli("run", "default", "-w", "bssplit=4kB/50:8kB/50", "-w", "offset=1MB", "-w", "size=4MB", "-w", "rw=read:4kB", "-w", "number_ios=100", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["read"]
    assert r["bytes"] % 4096 == 0 and r["bytes"] / r["ios"] > 4096  # 4 KiB and 8 KiB, not 4000 and 8000
    bad = cli("run", "default", "-w", "bs=4q")
    assert bad.returncode == 2 and "-w bs=4q" in bad.stderr
