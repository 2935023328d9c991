"""Issue 29, item 18: the memory bound holds in every case. The estimate covers every per-job
and per-queue structure (checked against what runs take), the limit is the least of the
machine's memory, ``ulimit -v`` and the cgroup's, and an allocation the system refuses anyway
is a clear error with exit code 2, never an abort (134)."""

import json
import subprocess
import sys

import pytest

import ssdlab

from conftest import ROOT
from test_cli import no_traceback

SSDLAB = [sys.executable, "-m", "ssdlab"]

# Runs in a fresh process: the growth of its peak resident memory over the run, and the estimate.
# The peak is the kernel's high-water mark, reset just before the run (clear_refs 5).
MEASURE = """
import json, sys, ssdlab
from ssdlab import _core
def kib(key):
    return int(next(l for l in open("/proc/self/status") if l.startswith(key)).split()[1]) * 1024
text, device = sys.argv[1], sys.argv[2]
cfg = ssdlab.api.load_jobfile("m.fio", device=device, text=text).configs[0]
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = kib("VmRSS:")
_core.Simulation(cfg._native, False).run(None)
print(json.dumps({"grew": kib("VmHWM:") - before, "estimate": cfg.memory()}))
"""


def jobfile(jobs, **options):
    head = "".join(f"{k}={v}\n" for k, v in options.items())
    return "[global]\n" + head + "".join(f"[j{i}]\n" for i in range(jobs))


@pytest.mark.parametrize(
    "text",
    [
        jobfile(256, rw="randread", bs="4k", number_ios=5, ioengine="libaio", direct=1),  # many jobs: their histograms
        jobfile(8, rw="randread", bs="2M", iodepth=1023, number_ios=3000, ioengine="libaio", direct=1),  # deep queues of large I/O
        jobfile(8, rw="randread", bs="4k", iodepth=1023, number_ios=3000, ioengine="libaio", direct=1),
        jobfile(64, rw="randread", bs="2M", number_ios=300),  # fio's default: psync, buffered: the page cache
        jobfile(16, rw="randwrite", bs="4k", iodepth=64, number_ios=20000, ioengine="libaio", direct=1),  # the maps
    ],
    ids=["256-jobs", "qd1023-2M", "qd1023-4k", "buffered-64-jobs", "writes"],
)
def test_the_memory_estimate_bounds_what_runs_take(text, tmp_path):
    r = subprocess.run([sys.executable, "-c", MEASURE, text, "tlc"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    m = json.loads(r.stdout)
    grew, est = m["grew"], m["estimate"]["total"]
    assert est >= grew, m
    assert est <= 4 * grew + (64 << 20), m  # a bound, not a wild guess


def limited(kib, *args):
    """``ssdlab ARGS`` under ``ulimit -v KIB``."""
    cmd = " ".join(["ulimit -v", str(kib), ";", "exec", *(f"'{a}'" for a in [*SSDLAB, *args])])
    return subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_limit_follows_ulimit_v():
    # This aged drive (7.8 GiB) aborted with rc 134 after 131 s under ulimit -v 4 GiB: the
    # limit was half the machine's memory, whatever the process could map.
    p = limited(4 << 20, "run", "tlc-aged", "--set", "media.nand.blocks_per_plane=262144")
    assert p.returncode == 2, (p.returncode, p.stderr)
    no_traceback(p)
    text = " ".join(p.stderr.split())  # the console wraps the message where it likes
    assert "estimated" in text and "exceeds the limit of" in text and "ulimit -v" in text, p.stderr
    limit = float(text.split("exceeds the limit of ")[1].split("GiB")[0])
    assert 1.5 < limit < 4.0, p.stderr
    probe = "import ssdlab; print(ssdlab.load_config('tlc').memory()['limit'])"
    r = subprocess.run(["bash", "-c", f"ulimit -v {4 << 20}; exec '{sys.executable}' -c \"{probe}\""], capture_output=True, text=True)
    assert r.returncode == 0 and int(r.stdout) < 4 << 30, r.stderr
    assert ssdlab.load_config("tlc").memory()["limit"] >= int(r.stdout)


def test_many_jobs_are_estimated_before_anything_runs(tmp_path):
    # 4,096 sections were estimated at 130 MiB and aborted at 3.6 GB.
    job = tmp_path / "many.fio"
    job.write_text(jobfile(4096, rw="randread", bs="2M", iodepth=1023, number_ios=1000))
    est = ssdlab.api.load_jobfile(str(job), device="tlc").configs[0].memory()
    assert est["latency histograms"] > 3 << 30 and est["page cache"] > 64 << 20, est
    p = limited(4 << 20, "run", str(job), "--device", "tlc")
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    no_traceback(p)
    assert "latency histograms" in p.stderr and "exceeds the limit" in p.stderr, p.stderr


def test_an_allocation_the_system_refuses_is_a_clear_error():
    # The limit raised above what the process may map: the estimate lets the run start, and
    # the allocation the system refuses ends it with a message and rc 2, not SIGABRT (134).
    p = limited(2 << 20, "run", "tlc-aged", "--set", "media.nand.blocks_per_plane=262144", "--max-memory", "1TiB")
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    text = " ".join(p.stderr.split())
    assert "error: out of memory: the system refused" in text and "ulimit -v" in text, p.stderr
    no_traceback(p)
