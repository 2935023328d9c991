"""fio job files: fio's dialect, the mapping onto the simulated workload, the 107 example files
of fio's repository (each pinned to its outcome), fio's JSON layout, and fio's command line."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import ssdlab
from ssdlab import api, fiojob

from conftest import ROOT, SHARED

FIO_JOBS = SHARED / "data" / "fio-jobs"

# Each file of ../shared/data/fio-jobs: "ok: N groups, M jobs", or the line and reason it fails
# with (no environment variables set). A change in any outcome must be deliberate.
EXPECTED = {
    "1mbs_clients.fio": "ok: 1 groups, 32 jobs",
    "aio-read.fio": "ok: 1 groups, 4 jobs",
    "atomic-verify.fio": "ok: 1 groups, 10 jobs",
    "backwards-read.fio": "ok: 1 groups, 1 jobs",
    "basic-verify.fio": "ok: 1 groups, 1 jobs",
    "butterfly.fio": "ok: 1 groups, 2 jobs",
    "cmdprio-bssplit.fio": "ok: 4 groups, 4 jobs",
    "cmdprio-percentage.fio": "ok: 1 groups, 1 jobs",
    "cpp_null.fio": "ok: 1 groups, 1 jobs",
    "cpuio.fio": ":2: ioengine=cpuio does CPU burning, not block I/O to a drive",
    "cross-stripe-verify.fio": "ok: 1 groups, 30 jobs",
    "dedupe-global.fio": "ok: 1 groups, 2 jobs",
    "dev-dax.fio": ":3: ioengine=dev-dax does loads and stores to device-DAX persist",
    "dfs.fio": ":3: ${POOL} is not set in the environment",
    "dircreate-ioengine.fio": ":15: ioengine=dircreate does directory creation, not block I/O to",
    "dirdelete-ioengine.fio": ":8: ioengine=dirdelete does directory deletion, not block I/O to",
    "dirstat-ioengine.fio": ":7: ioengine=dirstat does directory stat(), not block I/O to a d",
    "disk-zone-profile.fio": "ok: 1 groups, 1 jobs",
    "e4defrag.fio": ":2: ioengine=e4defrag does ext4 defragmentation, not block I/O t",
    "e4defrag2.fio": ":6: ioengine=e4defrag does ext4 defragmentation, not block I/O t",
    "enospc-pressure.fio": "ok: 1 groups, 3 jobs",
    "example_latency_steadystate.fio": "ok: 1 groups, 1 jobs",
    "exec.fio": ":6: ioengine=exec does running programs, not block I/O to a driv",
    "exitwhat.fio": "ok: 2 groups, 11 jobs",
    "falloc.fio": ":2: ioengine=falloc does fallocate(), not block I/O to a drive",
    "filecreate-ioengine.fio": ":15: ioengine=filecreate does file creation, not block I/O to a d",
    "filedelete-ioengine.fio": ":8: ioengine=filedelete does file deletion, not block I/O to a d",
    "filestat-ioengine.fio": ":7: ioengine=filestat does stat(), not block I/O to a drive",
    "fio-rand-RW.fio": "ok: 1 groups, 4 jobs",
    "fio-rand-read.fio": "ok: 1 groups, 1 jobs",
    "fio-rand-write.fio": "ok: 1 groups, 4 jobs",
    "fio-seq-RW.fio": "ok: 1 groups, 4 jobs",
    "fio-seq-read.fio": "ok: 1 groups, 1 jobs",
    "fio-seq-write.fio": "ok: 1 groups, 1 jobs",
    "fixed-rate-submission.fio": "ok: 1 groups, 1 jobs",
    "flow.fio": "ok: 1 groups, 2 jobs",
    "fsx.fio": "ok: 1 groups, 1 jobs",
    "ftruncate.fio": ":4: ioengine=ftruncate does ftruncate(), not block I/O to a driv",
    "gfapi.fio": ":4: ioengine=gfapi does GlusterFS, not block I/O to a drive",
    "gpudirect-rdmaio-client.fio": ":3: ioengine=rdma does RDMA verbs, not block I/O to a drive",
    "gpudirect-rdmaio-server.fio": ":3: ioengine=rdma does RDMA verbs, not block I/O to a drive",
    "http-s3-crypto.fio": ":16: ${S3_KEY} is not set in the environment",
    "http-s3-storage-class.fio": ":16: ${S3_KEY} is not set in the environment",
    "http-s3.fio": ":31: ${S3_KEY} is not set in the environment",
    "http-swift.fio": ":19: ${SWIFT_id} is not set in the environment",
    "http-webdav.fio": ":2: ioengine=http does HTTP object storage, not block I/O to a d",
    "ime.fio": ":26: ioengine=ime_psync does DDN IME over the network, not block ",
    "iometer-file-access-server.fio": "ok: 1 groups, 1 jobs",
    "jesd219.fio": "ok: 1 groups, 4 jobs",
    "latency-profile.fio": "ok: 1 groups, 1 jobs",
    "libblkio-io_uring.fio": "ok: 1 groups, 4 jobs",
    "libblkio-virtio-blk-vfio-pci.fio": "ok: 1 groups, 4 jobs",
    "libcufile-cufile.fio": ":11: ${FIO_DIR} is not set in the environment",
    "libcufile-posix.fio": ":11: ${FIO_DIR} is not set in the environment",
    "libhdfs.fio": ":6: ioengine=libhdfs does HDFS, not block I/O to a drive",
    "libhipfile-hipfile.fio": ":11: ${FIO_DIR} is not set in the environment",
    "libhipfile-posix.fio": ":11: ${FIO_DIR} is not set in the environment",
    "libiscsi.fio": ":2: ioengine=libiscsi does an iSCSI target, not block I/O to a d",
    "libpmem.fio": ":4: ioengine=libpmem does loads and stores to persistent memory ",
    "libzbc-rand-write.fio": "ok: 1 groups, 16 jobs",
    "libzbc-seq-read.fio": "ok: 1 groups, 1 jobs",
    "mtd.fio": ":4: ioengine=mtd does raw MTD flash, not block I/O to a drive",
    "nbd.fio": ":22: ${uri} is not set in the environment",
    "netio.fio": ":3: ioengine=net does network sockets, not block I/O to a drive",
    "netio_multicast.fio": ":3: ioengine=net does network sockets, not block I/O to a drive",
    "netio_vsock.fio": ":3: ioengine=net does network sockets, not block I/O to a drive",
    "netio_vsock_receiver.fio": ":3: ioengine=net does network sockets, not block I/O to a drive",
    "netio_vsock_sender.fio": ":3: ioengine=net does network sockets, not block I/O to a drive",
    "nfs.fio": ":5: ioengine=nfs does an NFS server, not block I/O to a drive",
    "null.fio": "ok: 1 groups, 1 jobs",
    "numa.fio": "ok: 1 groups, 2 jobs",
    "page_fault.fio": ":3: ioengine=page_fault does page faults, not block I/O to a dri",
    "poisson-rate-submission.fio": "ok: 1 groups, 1 jobs",
    "rados.fio": ":14: ioengine=rados does Ceph RADOS objects, not block I/O to a d",
    "rand-zones.fio": "ok: 1 groups, 1 jobs",
    "rbd.fio": ":14: ioengine=rbd does Ceph RBD over the network, not block I/O t",
    "rdmaio-client.fio": ":3: ioengine=rdma does RDMA verbs, not block I/O to a drive",
    "rdmaio-server.fio": ":3: ioengine=rdma does RDMA verbs, not block I/O to a drive",
    "sequence-distribution.fio": "ok: 2 groups, 2 jobs",
    "sg_verify-fail.fio": "ok: 5 groups, 5 jobs",
    "sg_verify.fio": "ok: 7 groups, 7 jobs",
    "sg_write_same_ndob.fio": "ok: 4 groups, 4 jobs",
    "sprandom.fio": ":32: ${FIO_BS} is not set in the environment",
    "ssd-steadystate.fio": "ok: 2 groups, 5 jobs",
    "ssd-test.fio": "ok: 4 groups, 4 jobs",
    "steadystate.fio": "ok: 2 groups, 8 jobs",
    "surface-scan.fio": "ok: 2 groups, 2 jobs",
    "tiobench-example.fio": "ok: 4 groups, 16 jobs",
    "uring-cmd-bsg.fio": "ok: 6 groups, 6 jobs",
    "uring-cmd-fdp.fio": "ok: 1 groups, 3 jobs",
    "uring-cmd-ng.fio": "ok: 3 groups, 3 jobs",
    "uring-cmd-pi-ext.fio": "ok: 2 groups, 2 jobs",
    "uring-cmd-pi-sb.fio": "ok: 2 groups, 2 jobs",
    "uring-cmd-trim-multi-range.fio": "ok: 2 groups, 2 jobs",
    "uring-cmd-write-mode.fio": "ok: 1 groups, 1 jobs",
    "uring-cmd-zoned-append.fio": "ok: 3 groups, 3 jobs",
    "uring-cmd-zoned.fio": "ok: 3 groups, 3 jobs",
    "waitfor.fio": "ok: 1 groups, 16 jobs",
    "xnvme-compare.fio": ":70: ${FIO_RW} is not set in the environment",
    "xnvme-fdp.fio": ":54: ${FIO_RW} is not set in the environment",
    "xnvme-pi.fio": "ok: 2 groups, 2 jobs",
    "xnvme-zoned.fio": ":85: ${FIO_RW} is not set in the environment",
    "zbd-rand-write-trim-gc.fio": "ok: 1 groups, 3 jobs",
    "zbd-rand-write-zone-reset-gc.fio": "ok: 1 groups, 1 jobs",
    "zbd-rand-write.fio": "ok: 1 groups, 16 jobs",
    "zbd-seq-read.fio": "ok: 1 groups, 1 jobs",
    "zipf.fio": "ok: 1 groups, 1 jobs",
}


# Files written for another drive than the default 256 GiB device, with the device they get.
DEVICE = {
    # 30 jobs 124 GiB apart, each writing 120 GiB: a 4 TB drive (fio refuses the offsets on a
    # smaller one, as ssdlab does).
    "cross-stripe-verify.fio": ("default", {"media.capacity": "4TiB"}),
    # A filesystem test: files of 128 GiB in a 999 GiB region, so a 1 TiB drive.
    "enospc-pressure.fio": ("default", {"media.capacity": "1TiB"}),
    # FDP with placement identifiers: a drive with 8 reclaim unit handles.
    "uring-cmd-fdp.fio": ("tlc", {"ftl.placement": "fdp", "ftl.fdp_handles": 8, "ftl.op_ratio": 0.1}),
    # NVMe Write Zeroes, Write Uncorrectable, Verify and Compare (and the sg engine's SCSI
    # equivalents) are modelled on flash drives.
    **{f: ("tlc", None) for f in ("uring-cmd-write-mode.fio", "sg_verify.fio", "sg_verify-fail.fio", "sg_write_same_ndob.fio")},
    # An extended LBA format: 4096 B of data and 64 B of protection information per block.
    "uring-cmd-pi-ext.fio": ("tlc", {"nvme.lba_size": "4KiB", "nvme.metadata_size": "64B", "nvme.extended_lba": True}),
    # libblkio's user-space virtio-blk driver: a device presenting virtqueues.
    "libblkio-virtio-blk-vfio-pci.fio": ("default", {"nvme.interface": "virtio-blk"}),
    # fio's zbd mode: a zoned drive with 256 MiB zones.
    **{f: ("zns", None) for f in ("libzbc-rand-write.fio", "libzbc-seq-read.fio", "uring-cmd-zoned.fio", "zbd-rand-write.fio",
                                  "zbd-rand-write-zone-reset-gc.fio", "zbd-seq-read.fio", "zbd-rand-write-trim-gc.fio", "uring-cmd-zoned-append.fio")},
}


def outcome(path: Path) -> str:
    try:
        device, overrides = DEVICE.get(path.name, (None, None))
        plan = api.load_jobfile(path, device, env={}, set=overrides)
    except ssdlab.WorkloadError as e:
        msg = str(e)
        assert msg.startswith(f"{path}:"), msg  # every failure names file:line
        line, _, reason = msg[len(str(path)) + 1:].partition(": ")
        assert line.isdigit(), msg
        return f":{line}: {reason[:60]}"
    return f"ok: {len(plan.configs)} groups, {sum(len(g.jobs) for g in plan.groups)} jobs"


@pytest.mark.shared("data/fio-jobs")
def test_every_example_job_file_is_classified():
    files = sorted(p.name for p in FIO_JOBS.glob("*.fio"))
    assert len(files) == 107 and files == sorted(EXPECTED)
    got = {name: outcome(FIO_JOBS / name) for name in files}
    assert got == EXPECTED
    assert sum(v.startswith("ok") for v in got.values()) >= 56


@pytest.mark.shared("data/fio-jobs")
def test_env_substitution_lets_a_file_through():
    with pytest.raises(ssdlab.WorkloadError, match="FIO_RW"):
        api.load_jobfile(FIO_JOBS / "xnvme-compare.fio", env={})
    err = outcome_with(FIO_JOBS / "xnvme-compare.fio", {"FIO_RW": "randread", "FIO_BS": "4k"})
    assert "FIO_RW" not in err


def outcome_with(path, env):
    try:
        api.load_jobfile(path, env=env)
        return "ok"
    except ssdlab.WorkloadError as e:
        return str(e)


def write(tmp_path, text, name="t.fio"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_dialect_global_inheritance_flags_comments_suffixes(tmp_path):
    p = write(tmp_path, """; a comment
# another
[global]
ioengine=libaio
bs=4K
iodepth=8   ; trailing comment
size=1G
direct=1

[a]
rw=randread
numjobs=2

[global]
bs=16k

[b]
rw=write
stonewall
iodepth=4
size=512m
time_based
runtime=2s
""")
    groups, ignored = fiojob.load(p, env={})
    assert [len(g.jobs) for g in groups] == [2, 1]
    a0, a1 = groups[0].jobs
    assert (a0["name"], a1["name"]) == ("a.0", "a.1")
    assert a0["rw"] == "randread" and a0["bs"] == "4096,4096" and a0["iodepth"] == 8 and a0["size"] == 1 << 30
    b = groups[1].jobs[0]
    assert b["bs"] == "16384,16384", "a later [global] applies to the jobs after it"
    assert b["size"] == 512 << 20 and b["runtime"] == "2.0s" and b["iodepth"] == 4


def test_offset_increment_filesize_and_blockalign(tmp_path):
    p = write(tmp_path, "[j]\nioengine=libaio\nfilesize=1g\noffset=4k\noffset_increment=2g\nnumjobs=3\nblockalign=4k\n")
    groups, _ = fiojob.load(p, env={})
    assert [(j["offset"], j["size"]) for j in groups[0].jobs] == [(4096, 1 << 30), (4096 + (2 << 30), 1 << 30), (4096 + (4 << 30), 1 << 30)]
    assert all(j["blockalign"] == 4096 for j in groups[0].jobs)
    p = write(tmp_path, "[j]\nbs=4k\nblockalign=64k,4k\n")
    with pytest.raises(ssdlab.WorkloadError, match=":3: blockalign=64k,4k: one alignment"):
        fiojob.load(p, env={})
    p = write(tmp_path, "[j]\nbs=4k\nba=1000\n")
    with pytest.raises(ssdlab.WorkloadError, match=":3: ba=1000: offsets align to multiples of 512 B"):
        fiojob.load(p, env={})


def test_bsrange_loops_and_bssplit_in_fio_units(tmp_path):
    p = write(tmp_path, "[j]\nrw=randread\nbsrange=4k-16k\nloops=3\nnumber_ios=50\nbssplit=4kB/50:8kB/50\n")
    with pytest.raises(ssdlab.WorkloadError, match="bsrange"):  # both: the core refuses, at the line
        ssdlab.run(api.load_jobfile(p, env={}).configs[0])
    p = write(tmp_path, "[j]\nrw=randread\nbsrange=4k-16k\nloops=3\nnumber_ios=50\n")
    job = fiojob.load(p, env={})[0][0].jobs[0]
    assert job["bsrange"] == "4096-16384,4096-16384" and job["loops"] == 3
    r = ssdlab.run(api.load_jobfile(p, env={}).configs[0], keep_ios=True)
    assert len(r.ios) == 150 and set(r.ios["len"]) == {4096, 8192, 12288, 16384}
    p = write(tmp_path, "[j]\nbsrange=8k-8k,4k-4k\n")
    assert fiojob.load(p, env={})[0][0].jobs[0]["bs"] == "8192,4096"
    p = write(tmp_path, "[j]\nbssplit=4kB/50:8kB/50\n")
    assert fiojob.load(p, env={})[0][0].jobs[0]["bssplit"] == "4096/50:8192/50"  # fio's kb_base=1024
    p = write(tmp_path, "[j]\nbsrange=4k\n")
    with pytest.raises(ssdlab.WorkloadError, match=":2: bsrange=4k: a range is min-max"):
        fiojob.load(p, env={})


def test_fio_steady_state_stops_the_group_when_its_rounds_pass(tmp_path):
    # fio's ss: rounds of ss_interval (1 s by default), a window of ss_dur, rounds after
    # ss_ramp + 1 s; the group stops when every round is within 5 % of the window's mean.
    p = write(tmp_path, "[g]\nrw=randread\niodepth=8\ntime_based\nruntime=10\nss=iops:5%\nss_dur=50ms\nss_interval=10ms\nss_ramp=20ms\n")
    (g,), _ = fiojob.load(p, env={})
    assert g.workload["stats.steady_rule"] == "deviation" and g.workload["stats.steady_window"] == 5 and g.workload["stats.steady_limit"] == 0.05
    r = ssdlab.run(api.load_jobfile(p, "p4800x", env={}).configs[0])
    ss = r.summary["steady_state"]
    assert ss["reached"] and ss["metric"] == "iops" and ss["first"] >= 102  # fio records from ss_ramp + 1 s: 102 rounds of 10 ms
    w = ss["rounds"][ss["first"]:ss["last"] + 1]
    mean = sum(w) / len(w)
    assert max(abs(v - mean) for v in w) < 0.05 * mean
    assert r.summary["sim_time_s"] < 1.5  # stopped long before runtime=10
    # The slope rule, and the refusals.
    p = write(tmp_path, "[g]\nss=bw_slope:1%\nss_dur=30\n")
    assert fiojob.load(p, env={})[0][0].workload["stats.steady_rule"] == "slope"
    for text, needle in (("ss=iops:100\nss_dur=30", "per cent"), ("ss=foo:1%\nss_dur=30", "iops, bw or lat"), ("ss=iops:1%\nss_dur=1", "two rounds")):
        with pytest.raises(ssdlab.WorkloadError, match=needle):
            fiojob.load(write(tmp_path, f"[g]\n{text}\n"), env={})


@pytest.mark.shared("data/fio-jobs/jesd219.fio")
def test_jesd219_runs_with_its_size_mix_alignment_and_zones(tmp_path):
    # JEDEC's endurance workload: 512 B to 64 KiB writes at 4 KiB alignment, half of them in
    # the first 5 % of the drive.
    plan = api.load_jobfile(FIO_JOBS / "jesd219.fio", env={})
    job = plan.groups[0].jobs[0]
    assert job["blockalign"] == 4096 and job["random_distribution"] == "zoned:50/5:30/15:20/80"
    res = ssdlab.run("default", set={"workload.jobs": [dict(job, number_ios=3000, iodepth=32)], "workload.numjobs": 1, "workload.rw": "randrw"}, keep_ios=True)
    ios = res.ios
    cap = ssdlab.load_config("default").capacity
    assert (ios["offset"] % 4096 == 0).all() and (ios["len"] < 4096).any()
    first = (ios["offset"] < cap // 20).mean()
    assert 0.45 < first < 0.55, first


def test_thinktime_is_microseconds_and_spaces_the_ios(tmp_path):
    p = write(tmp_path, "[j]\nrw=randread\nthinktime=50\nnumber_ios=200\n")
    [g], _ = fiojob.load(p, env={})
    assert g.jobs[0]["thinktime"] == "50000ns"
    plan = api.load_jobfile(p, "default")
    [res] = plan.run()
    lat = res.summary["read"]["latency_us"]["mean"]
    assert res.summary["sim_time_s"] == pytest.approx((200 * lat + 199 * 50) * 1e-6, rel=1e-9)
    with pytest.raises(ssdlab.WorkloadError, match="thinktime_blocks=4"):
        fiojob.load(write(tmp_path, "[j]\nthinktime=5ms\nthinktime_blocks=4\n"), env={})


def test_ioengine_and_its_options_pick_the_hosts_io_engine(tmp_path):
    cases = {
        "": ("psync", None),
        "ioengine=pvsync2\n": ("psync", None),
        "ioengine=libaio\niodepth=16\niodepth_batch_submit=8\n": ("libaio", 8),
        "ioengine=io_uring\niodepth=4\niodepth_batch=0\n": ("io_uring", 4),
        "ioengine=io_uring\nhipri\n": ("io_uring-hipri", None),
        "ioengine=io_uring\nsqthread_poll=1\n": ("io_uring-sqpoll", None),
        "ioengine=spdk\n": ("spdk", None),
        "ioengine=null\n": ("null", None),
        "ioengine=cpp_null\n": ("null", None),
        "ioengine=posixaio\n": (None, None),
    }
    for text, (engine, batch) in cases.items():
        [g], _ = fiojob.load(write(tmp_path, f"[j]\nrw=randread\ndirect=1\n{text}"), env={})
        assert g.jobs[0].get("ioengine") == engine, text
        assert g.jobs[0].get("iodepth_batch") == batch, text
    with pytest.raises(ssdlab.WorkloadError, match="sqthread_poll with hipri"):
        fiojob.load(write(tmp_path, "[j]\nioengine=io_uring\nhipri\nsqthread_poll\n"), env={})
    # On the device: polling costs less CPU per I/O than sleeping on an interrupt.
    cpu = {}
    for text in ("ioengine=io_uring\n", "ioengine=io_uring\nhipri\n"):
        [res] = api.load_jobfile(write(tmp_path, f"[j]\nrw=randread\ndirect=1\nnumber_ios=300\n{text}"), "default").run()
        cpu[text] = res.summary["metrics"]["host.cpu.busy"] / res.summary["read"]["ios"]
    assert cpu["ioengine=io_uring\nhipri\n"] < cpu["ioengine=io_uring\n"]


def test_the_null_engine_completes_without_a_device(tmp_path):
    # Issue 29, item 3: fio's null engine was simulated as device I/O (a QD1 read took the
    # drive's 70+ us). Each I/O costs host.costs.null on the job's CPU; nothing reaches PCIe,
    # the controller or the media.
    for depth in (1, 8):
        [res] = api.load_jobfile(write(tmp_path, f"[j]\nioengine=null\nrw=randrw\nbs=4k\niodepth={depth}\nnumber_ios=2000\n"), "tlc").run()
        s = res.summary
        assert s["read"]["ios"] + s["write"]["ios"] == 2000
        # Each I/O waits for the ones queued before it on the job's one CPU: at QD1 exactly the cost.
        mean = s["read"]["latency_us"]["mean"]
        assert mean == pytest.approx(0.065 * (1 if depth == 1 else depth), rel=0.02 if depth == 1 else 0.2), (depth, mean)
        m = s["metrics"]
        assert m["ctrl.busy"] == 0 and m["pcie.down.tlps"] == 0 and m["pcie.up.tlps"] == 0, m
        assert s["iops"] == pytest.approx(1e12 / 65_000, rel=0.01)


def test_rate_is_a_cap_per_direction_in_bytes(tmp_path):
    # fio: a bare number is bytes per second, k is 1024; "a," caps reads only, ",b" writes only.
    cases = {"rate=400k": "409600B/s,409600B/s", "rate=16m,1m": "16777216B/s,1048576B/s", "rate=1250": "1250B/s,1250B/s",
             "rate=,4m": ",4194304B/s", "rate=2m,": "2097152B/s,", "rate=300,300,300": "300B/s,300B/s"}
    for text, want in cases.items():
        [g], _ = fiojob.load(write(tmp_path, f"[j]\nrw=randrw\n{text}\n"), env={})
        assert g.jobs[0]["rate"] == want, text
    with pytest.raises(ssdlab.WorkloadError, match="mutually exclusive"):
        fiojob.load(write(tmp_path, "[j]\nrate=1m\nrate_iops=100\n"), env={})
    # On the device: the write cap holds, reads fill the rest.
    plan = api.load_jobfile(write(tmp_path, "[j]\nrw=randrw\nioengine=libaio\ndirect=1\niodepth=8\nruntime=200ms\nrate=,4m\n"), "default")
    [res] = plan.run()
    assert res.summary["write"]["bandwidth_mib_s"] == pytest.approx(4.0, rel=0.02)
    assert res.summary["read"]["ios"] > 20 * res.summary["write"]["ios"]


def test_min_rates_start_delays_and_latency_targets_map_in_fios_units(tmp_path):
    text = "[j]\nratemin=1m\nrate_cycle=500\nstartdelay=2\n[k]\nrate_iops_min=10,\nstartdelay=1-3\nnumjobs=2\n"
    [g], _ = fiojob.load(write(tmp_path, text), env={})
    j, k0, k1 = g.jobs
    assert (j["rate_min"], j["rate_cycle"], j["startdelay"]) == ("1048576B/s,1048576B/s", "500ms", "2000000us")
    assert k0["rate_iops_min"] == "10,"
    # A range is drawn per copy, in microseconds, repeatably.
    d0, d1 = (int(x["startdelay"][:-2]) for x in (k0, k1))
    assert 1_000_000 <= d0 <= 3_000_000 and 1_000_000 <= d1 <= 3_000_000 and d0 != d1
    [again], _ = fiojob.load(write(tmp_path, text), env={})
    assert again.jobs[1]["startdelay"] == k0["startdelay"]
    [g], _ = fiojob.load(write(tmp_path, "[j]\nlatency_target=500\nlatency_window=5s\nlatency_percentile=99.9\niodepth=64\n"), env={})
    assert (g.jobs[0]["latency_target"], g.jobs[0]["latency_window"], g.jobs[0]["latency_percentile"]) == ("500000000ps", "5000000000000ps", 99.9)


def test_a_latency_target_job_reports_its_depth_and_a_missed_minimum_its_error(tmp_path):
    p = write(tmp_path, "[j]\nrw=randread\nioengine=libaio\ndirect=1\niodepth=256\nruntime=2\nlatency_target=300\nlatency_window=20ms\nlatency_percentile=99\n")
    plan = api.load_jobfile(p, "tlc")
    results = plan.run()
    job = api.fio_json(plan, results)["jobs"][0]
    assert 1 < job["latency_depth"] < 256 and job["error"] == 0
    assert (job["latency_target"], job["latency_window"], job["latency_percentile"]) == (300_000, 20_000, 99.0)
    assert results[0].summary["read"]["latency_us"]["p99"] <= 300
    p = write(tmp_path, "[j]\nrw=randread\nioengine=libaio\ndirect=1\nruntime=10\nratemin=1g\nnumber_ios=100000000\n")
    plan = api.load_jobfile(p, "tlc")
    [res] = plan.run()
    assert res.summary["jobs"][0]["error"].startswith("j: rate_min=1073741824B/s not met")
    assert api.fio_json(plan, [res])["jobs"][0]["error"] == 5


def test_new_group_reports_apart_and_exitall_stops_the_rest(tmp_path):
    # fio: new_group starts a reporting group without waiting; exitall with exit_what=stonewall
    # stops every running job when the first ends.
    text = "[global]\nexitall=1\n[short]\nnumber_ios=500\nexit_what=stonewall\n[long]\nnew_group=1\nruntime=1\n"
    plan = api.load_jobfile(write(tmp_path, text), "default")
    assert len(plan.configs) == 1 and [j["group"] for j in plan.groups[0].jobs] == [0, 1]
    [res] = plan.run()
    assert res.summary["sim_time_s"] < 0.01
    doc = api.fio_json(plan, [res])
    assert [j["groupid"] for j in doc["jobs"]] == [0, 1]
    # exit_what=all: the groups after it never start.
    text = "[a]\nexitall\nexit_what=all\nnumber_ios=10\n[b]\nstonewall\nnumber_ios=10\n"
    plan = api.load_jobfile(write(tmp_path, text), "default")
    assert len(plan.configs) == 2 and len(plan.run()) == 1


def test_wait_for_in_the_same_group_starts_after_the_waitee(tmp_path):
    text = "[w]\nrw=write\nnumber_ios=2000\nnumjobs=2\n[r]\nnew_group\nwait_for=w\nruntime=5ms\n"
    plan = api.load_jobfile(write(tmp_path, text), "default")
    assert len(plan.configs) == 1 and plan.groups[0].jobs[2]["wait_for"] == "w"
    [res] = plan.run()
    alone = api.load_jobfile(write(tmp_path, "[w]\nrw=write\nnumber_ios=2000\nnumjobs=2\n"), "default").run()[0]
    assert res.summary["sim_time_s"] == pytest.approx(alone.summary["sim_time_s"] + 0.005, abs=3e-4)


def test_shares_of_the_device_resolve_against_its_capacity(tmp_path):
    # fio's get_start_offset and setup_files: offsets aligned up to the smallest block, sizes cut
    # at the end of the device and down to whole blocks.
    text = "[a]\nbs=8k\noffset=30%\nsize=30%\n[b]\nsize=25%\noffset_increment=25%\nnumjobs=4\n[c]\noffset=90%\nsize=30%\n"
    plan = api.load_jobfile(write(tmp_path, text), "default", set={"media.capacity": "100GiB"})
    cap = 100 * 2**30
    jobs = plan.groups[0].jobs
    assert [j.get("offset") for j in jobs] == [-(-cap * 30 // 100 // 8192) * 8192, 0, cap // 4, cap // 2, 3 * cap // 4, cap * 90 // 100 // 4096 * 4096]
    assert [j.get("size") for j in jobs] == [cap * 30 // 100 // 8192 * 8192] + [cap // 4] * 4 + [cap - jobs[-1]["offset"]]
    with pytest.raises(ssdlab.WorkloadError, match="whole percentage"):
        fiojob.load(write(tmp_path, "[j]\nsize=1.5%\n"), env={})


def test_zbd_jobs_run_on_a_zoned_drive_in_zones(tmp_path):
    # fio's zbd mode: zone counts (Nz) in the device's zones, its zone size checked, and the
    # writes kept at the write pointers (the drive would refuse others).
    text = "[w]\nzonemode=zbd\nzonesize=256M\nrw=randwrite\nbs=512k\ndirect=1\noffset=524z\nsize=8z\nnumber_ios=2000\nmax_open_zones=4\n"
    plan = api.load_jobfile(write(tmp_path, text), "zns")
    job = plan.groups[0].jobs[0]
    assert (job["offset"], job["size"], job["zbd"], job["max_open_zones"]) == (524 * 2**28, 8 * 2**28, True, 4)
    [res] = plan.run()
    m = res.summary["metrics"]
    assert res.summary["write"]["ios"] == 2000 and m["ftl.zone_resets"] > 0 and res.summary["flash"]["ftl"]["gc_writes"] == 0
    with pytest.raises(ssdlab.WorkloadError, match="the device's zones are 268435456 B"):
        api.load_jobfile(write(tmp_path, text.replace("256M", "128M")), "zns")
    with pytest.raises(ssdlab.WorkloadError, match="counts zones, and the device has none"):
        api.load_jobfile(write(tmp_path, "[w]\nsize=2z\n"), "tlc")
    with pytest.raises(ssdlab.WorkloadError, match="zonemode=zbd needs a zoned drive"):
        api.load_jobfile(write(tmp_path, "[w]\nzonemode=zbd\nrw=randwrite\n"), "tlc")


@pytest.mark.shared("data/fio-jobs")
def test_sequence_distribution_visits_the_blocks_fio_lists(tmp_path):
    # fio's t/sequence.py: sequence:2,0,1 repeats the blocks; with the stride each repetition
    # moves three blocks on (12 blocks of 4 KiB, 6 I/Os each).
    plan = api.load_jobfile(FIO_JOBS / "sequence-distribution.fio", "default")
    import numpy as np

    got = []
    for cfg in plan.configs:
        sim = ssdlab._core.Simulation(cfg._native, True)
        sim.run(None)
        got.append(list(np.frombuffer(sim.io_log()["offset"], "<u8") // 4096))
    assert sorted(got[0]) == sorted([2, 0, 1, 2, 0, 1]) and sorted(got[1]) == sorted([2, 0, 1, 5, 3, 4])


def test_fdp_placement_identifiers_map_onto_the_drives_handles(tmp_path):
    fdp = {"ftl.placement": "fdp", "ftl.fdp_handles": 4, "ftl.op_ratio": 0.1}
    text = "[a]\nrw=randwrite\nfdp=1\nfdp_pli=3,0-1\n[b]\nrw=randwrite\nfdp=1\n[c]\nrw=randwrite\nfdp=1\nfdp_pli_select=random\nplids=2\n"
    plan = api.load_jobfile(write(tmp_path, text), "tlc", set=fdp)
    a, b, c = plan.groups[0].jobs
    assert (a["placement_ids"], b["placement_ids"], c["placement_ids"], c["placement_select"]) == ([0, 1, 3], [0, 1, 2, 3], [2], "random")
    with pytest.raises(ssdlab.WorkloadError, match="must name one of the drive's ftl.fdp_handles = 4"):
        api.load_jobfile(write(tmp_path, "[a]\nrw=randwrite\nfdp=1\nfdp_pli=5\n"), "tlc", set=fdp)
    with pytest.raises(ssdlab.WorkloadError, match="fdp_handles = 0"):
        api.load_jobfile(write(tmp_path, "[a]\nrw=randwrite\nfdp=1\nfdp_pli=1\n"), "tlc")


def test_write_modes_become_the_nvme_commands_of_the_writes(tmp_path):
    [g], _ = fiojob.load(write(tmp_path, "[j]\nioengine=io_uring_cmd\nrw=write\nwrite_mode=write/40:zeroes/30:uncor/20:verify/10\n"), env={})
    assert g.jobs[0]["write_mode"] == "write/40:zeroes/30:uncor/20:verify/10"
    groups, _ = fiojob.load(write(tmp_path, "[a]\nioengine=sg\nrw=write\nsg_write_mode=verify_bytchk_11\n[b]\nstonewall\nioengine=sg\nrw=write\nsg_write_mode=write_same_ndob\n"), env={})
    assert [g.jobs[0]["write_mode"] for g in groups] == ["compare-block", "zeroes"]
    with pytest.raises(ssdlab.WorkloadError, match="WRITE SAME with data"):
        fiojob.load(write(tmp_path, "[j]\nioengine=sg\nrw=write\nsg_write_mode=write_same\n"), env={})
    # On the device: a Verify reads the media and counts as a write of its length, as in fio.
    plan = api.load_jobfile(write(tmp_path, "[j]\nioengine=io_uring_cmd\nrw=randwrite\nbs=4k\nnumber_ios=500\nwrite_mode=verify\n"), "tlc")
    [res] = plan.run()
    s = res.summary
    assert s["write"]["ios"] == 500 and s["metrics"]["nand.host_reads"] == 500 and s["metrics"]["nand.programs"] == 0
    [g], _ = fiojob.load(write(tmp_path, "[j]\nioengine=io_uring_cmd\nrw=write\nzonemode=zbd\nwrite_mode=zone_append\n"), env={})
    assert g.jobs[0]["write_mode"] == "zone_append"
    with pytest.raises(ssdlab.WorkloadError, match="zone_append is modelled alone, for zbd jobs"):
        api.load_jobfile(write(tmp_path, "[j]\nioengine=io_uring_cmd\nrw=write\nwrite_mode=zone_append\n"), "zns")
    with pytest.raises(ssdlab.WorkloadError, match="modelled on flash drives"):
        api.load_jobfile(write(tmp_path, "[j]\nioengine=io_uring_cmd\nrw=write\nwrite_mode=zeroes\n"), "default")


def test_libblkio_virtio_blk_needs_a_device_with_virtqueues(tmp_path):
    text = "[j]\nioengine=libblkio\nlibblkio_driver=virtio-blk-vfio-pci\nrw=randread\nnumber_ios=100\n"
    with pytest.raises(ssdlab.WorkloadError, match='give the device nvme.interface = "virtio-blk"'):
        api.load_jobfile(write(tmp_path, text), "default")
    plan = api.load_jobfile(write(tmp_path, text), "default", set={"nvme.interface": "virtio-blk"})
    [res] = plan.run()
    assert res.summary["read"]["ios"] == 100


def test_overrides_win_over_the_job_files_own_values(tmp_path):
    # -w number_ios=... (settings) replaces each job's number_ios, rather than being ignored.
    text = "[a]\nnumber_ios=5000\n[b]\nnumber_ios=7000\nruntime=10s\n"
    plan = api.load_jobfile(write(tmp_path, text), "default", settings=[("workload.number_ios", "100"), ("workload.runtime", "\"1s\"")])
    [res] = plan.run()
    assert [j["ios"] for j in res.summary["jobs"]] == [100, 100]
    assert all("number_ios" not in j and "runtime" not in j for j in plan.groups[0].jobs)


def test_time_based_without_runtime_is_turned_off_as_fio_does(tmp_path):
    [g], _ = fiojob.load(write(tmp_path, "[j]\ntime_based\nsize=1m\n"), env={})
    assert "runtime" not in g.jobs[0] and any("fio turns it off" in n for n in g.notes)


def test_atomic_writes_follow_the_engine_and_the_drive(tmp_path):
    [g], _ = fiojob.load(write(tmp_path, "[j]\nrw=randwrite\nioengine=libaio\ndirect=1\natomic=1\n"), env={})
    assert g.jobs[0]["atomic"] is True
    with pytest.raises(ssdlab.WorkloadError, match="engine does not support atomic writes"):
        fiojob.load(write(tmp_path, "[j]\nrw=randwrite\nioengine=psync\natomic=1\n"), env={})
    with pytest.raises(ssdlab.WorkloadError, match="power of two no larger than nvme.atomic_write_unit"):
        api.load_jobfile(write(tmp_path, "[j]\nrw=randwrite\nioengine=libaio\ndirect=1\nbs=16k\natomic=1\n"), "default")


def test_rw_offset_modifier_reads_backwards(tmp_path):
    p = write(tmp_path, "[j]\nrw=read:-8k\nbs=4k\nsize=64k\nnumber_ios=32\n")
    plan = api.load_jobfile(p, "default")
    assert plan.groups[0].jobs[0]["rw_skip"] == -8192
    cfg = plan.configs[0]
    sim = ssdlab._core.Simulation(cfg._native, True)
    sim.run(None)
    import numpy as np

    offsets = np.frombuffer(sim.io_log()["offset"], "<u8")
    assert list(offsets[:5]) == [0, 61440, 57344, 53248, 49152], "each read 4 KiB below the last, wrapping to the end"


def test_mapping_details(tmp_path):
    p = write(tmp_path, """[sync]
ioengine=psync
iodepth=32
rw=randrw
rwmixwrite=30
bs=4k,64k
io_size=1m
filename=/dev/nvme0n1
verify=md5
""")
    groups, ignored = fiojob.load(p, env={})
    j = groups[0].jobs[0]
    assert j["iodepth"] == 1, "sync engines have one I/O in flight"
    assert j["rwmixread"] == 70 and j["bs"] == "4096,65536" and j["number_ios"] == 256
    assert ignored == ["filename", "verify"]


@pytest.mark.parametrize("text, needle", [
    ("[j]\nrw=randread\nbogus_opt=1\n", ":3: unknown fio option 'bogus_opt'"),
    ("[j]\nrw=randred\n", ":2: rw='randred'"),
    ("[j]\nrw=randread:8\n", ":2: rw=randread:8: sequential runs inside random jobs"),
    ("[j]\nthinktime_spin=10\n", ":2: thinktime_spin=10: has a meaning"),
    ("[j]\nrw=randtrim\nnum_range=4\n", ":3: num_range=4 with ioengine=psync: fio: can't use multiple ranges"),
    ("[j]\nioengine=net\n", ":2: ioengine=net does network sockets"),
    ("[j]\nsize=${NOPE}\n", ":2: ${NOPE} is not set"),
    ("[j]\nsize=10q\n", ":2: size='10q': not a size"),
    ("[j]\niodepth=x\n", ":2: iodepth='x': not an integer"),
    ("rw=read\n", ":1: 'rw=read': an option before any [section]"),
    ("[j]\nbs=4000\n", ":2: bs = "),
    ("[j]\nioengine=libaio\ndirect=1\niodepth=100000\n", ":4: iodepth = 100000"),
    ("[global]\nrw=read\n", "no job sections"),
    ("[j]\nrw=trimwrite\nrate=1m,2m,3m\n", ":3: rate=1m,2m,3m: a trim limit of its own"),
])
def test_bad_job_files_name_the_line_and_value(tmp_path, text, needle):
    p = write(tmp_path, text)
    with pytest.raises(ssdlab.WorkloadError) as e:
        api.load_jobfile(p, env={})
    assert needle in str(e.value), str(e.value)
    assert str(p) in str(e.value)


def test_a_job_file_runs_exactly_as_the_same_workload_in_toml(tmp_path):
    p = write(tmp_path, "[j]\nioengine=libaio\ndirect=1\nrw=randread\nbs=8k\niodepth=8\nnumber_ios=3000\nrandseed=7\n")
    plan = api.load_jobfile(p, "default")
    [res] = plan.run()
    ref = api.run("default", workload={"rw": "randread", "bs": "8k", "iodepth": 8, "numjobs": 1, "number_ios": 3000, "randseed": 7, "ioengine": "libaio"})
    for key in ("ios", "iops", "bandwidth_mib_s", "read", "breakdown_us"):
        assert res.summary[key] == ref.summary[key], key


def test_groups_run_one_after_another_with_fio_json(tmp_path):
    p = write(tmp_path, "[global]\nioengine=libaio\nnumber_ios=2000\n[r]\nrw=randread\niodepth=4\n[w]\nstonewall\nrw=randwrite\niodepth=2\n")
    plan = api.load_jobfile(p, "default", fio_percentiles=True)
    results = plan.run()
    doc = api.fio_json(plan, results)
    ref = json.loads((ROOT / "tests" / "data" / "fio-3.33-null-randrw.json").read_text())
    # Key names and nesting as real fio 3.33 writes them (a run of `fio --ioengine=null`).
    assert set(ref) <= set(doc)
    rjob, job = ref["jobs"][0], doc["jobs"][0]
    assert set(rjob) <= set(job)
    for op in ("read", "write", "trim"):
        assert set(rjob[op]) == set(job[op]), op
        for lat in ("slat_ns", "clat_ns", "lat_ns"):
            assert set(rjob[op][lat]) <= set(job[op][lat]) | {"percentile"}
    assert list(job["read"]["clat_ns"]["percentile"]) == list(rjob["read"]["clat_ns"]["percentile"])
    assert [(j["jobname"], j["groupid"]) for j in doc["jobs"]] == [("r", 0), ("w", 1)]
    r, w = doc["jobs"][0], doc["jobs"][1]
    assert r["read"]["total_ios"] == 2000 and r["write"]["total_ios"] == 0
    assert w["write"]["total_ios"] == 2000 and w["read"]["total_ios"] == 0
    # Units: ns and KiB/s; lat = slat + clat.
    s = results[0].summary["read"]
    assert r["read"]["lat_ns"]["mean"] == pytest.approx(s["latency_us"]["mean"] * 1e3)
    assert r["read"]["slat_ns"]["mean"] + r["read"]["clat_ns"]["mean"] == pytest.approx(r["read"]["lat_ns"]["mean"])
    assert r["read"]["bw"] == int(s["bandwidth_mib_s"] * 1024)
    p99 = r["read"]["clat_ns"]["percentile"]["99.000000"]
    assert r["read"]["clat_ns"]["min"] <= p99 <= r["read"]["clat_ns"]["max"] * 1.001


def test_cli_job_file_and_fio_command_line(cli, tmp_path):
    p = write(tmp_path, "[j]\nioengine=libaio\nrw=randread\niodepth=4\nnumber_ios=2000\nfilename=/dev/x\n")
    r = cli("run", str(p), "--output-format=json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["jobs"][0]["read"]["total_ios"] == 2000
    assert "ignored" in r.stderr and "filename" in r.stderr
    r = cli("run", "--rw=randwrite", "--bs=8k", "--iodepth=2", "--number_ios=1500", "--name=a", "--name=b", "--output-format=json")
    assert r.returncode == 0, r.stderr
    jobs = json.loads(r.stdout)["jobs"]
    assert [j["jobname"] for j in jobs] == ["a", "b"] and all(j["write"]["total_ios"] == 1500 for j in jobs)
    r = cli("run", str(p), "--device", "optane")
    assert r.returncode == 0 and "group 0" in r.stdout, r.stderr
    for bad in (["run", "--rw=nope"], ["run", str(write(tmp_path, "[j]\nfoo=1\n", "bad.fio"))], ["run", "--iodepth"]):
        r = cli(*bad)
        assert r.returncode == 2, (bad, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and "panicked" not in r.stderr


LINE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["[global]", "[j]", "rw=randread", "bs=4k", "iodepth=8", "stonewall", "numjobs=3", "size=1g",
                     "bssplit=4k/50:64k/50", "rw=read:-8k", "${X}", "ioengine=sync", "number_ios=10", "runtime=1"]),
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(sorted(fiojob.KNOWN)), st.text(max_size=12)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=12))
def test_parser_never_fails_other_than_with_a_workload_error(tmp_path_factory, lines):
    p = tmp_path_factory.mktemp("fuzz") / "f.fio"
    p.write_text("\n".join(lines), encoding="utf-8", errors="replace")
    try:
        api.load_jobfile(p, env={"X": "1"})
    except ssdlab.SsdlabError:
        pass


def _keys(x, pre=""):
    """Every key path of a JSON document (lists by their first item; percentiles, bins and job
    options by their presence only)."""
    out = set()
    if isinstance(x, dict):
        for k, v in x.items():
            out.add(f"{pre}/{k}")
            if k not in ("percentile", "bins", "job options", "global options"):
                out |= _keys(v, f"{pre}/{k}")
    elif isinstance(x, list) and x:
        out |= _keys(x[0], pre + "[]")
    return out


JOB = "[global]\nioengine={engine}\ndirect={direct}\nsize=64m\nbs=4k\nnumber_ios=3000\n[mix]\nrw=randrw\niodepth=4\n"


@pytest.fixture(scope="module")
def fio_outputs(tmp_path_factory):
    """ssdlab's json+ and terse for a 4 KiB random mix at QD4 on the tlc preset."""
    d = tmp_path_factory.mktemp("fio")
    p = d / "mix.fio"
    p.write_text(JOB.format(engine="libaio", direct=1))
    plan = api.load_jobfile(p, "tlc", fio_percentiles=True)
    results = plan.run()
    return d, api.fio_json(plan, results, plus=True), api.fio_terse(plan, results)


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (dev.py setup installs it as root)")
def test_fio_outputs_have_every_key_and_field_of_real_fio(fio_outputs, tmp_path):
    _, doc, terse = fio_outputs
    # Real fio on the same job with the null engine (no device: no disk_util).
    real = tmp_path / "real.fio"
    real.write_text(JOB.format(engine="null", direct=0))
    ref = json.loads(subprocess.run(["fio", "--output-format=json+", str(real)], capture_output=True, text=True, check=True).stdout)
    assert _keys(ref) - _keys(doc) == set()
    assert _keys(doc) - _keys(ref) == {k for k in _keys(doc) if k.startswith(("/disk_util", "/jobs[]/ssdlab"))}
    fields = subprocess.run(["fio", "--output-format=terse", str(real)], capture_output=True, text=True, check=True).stdout.strip().split(";")
    ours = terse.strip().split(";")
    assert len(ours) == len(fields) + 9  # fio's 9 disk_util fields follow a job's on a real disk
    assert ours[0] == fields[0] == "3" and ours[2] == fields[2] == "mix"


def test_fio_bucket_maps_and_disk_util_follow_the_run(fio_outputs):
    _, doc, _ = fio_outputs
    job, disk = doc["jobs"][0], doc["disk_util"][0]
    total = job["read"]["total_ios"] + job["write"]["total_ios"]
    lat = sum(job["latency_ns"].values()) + sum(job["latency_us"].values()) + sum(job["latency_ms"].values())
    assert lat == pytest.approx(100.0)
    assert sum(job["iodepth_level"].values()) == pytest.approx(100.0) and job["iodepth_level"]["4"] > 99.0  # QD4
    assert sum(job["iodepth_complete"].values()) == pytest.approx(100.0)
    # Direct I/O: every request reaches the disk; the bins count every completion.
    assert disk["read_ios"] + disk["write_ios"] == total and 0 < disk["util"] <= 100.0
    assert sum(job["read"]["clat_ns"]["bins"].values()) == job["read"]["total_ios"]
    # The bins hold the clat distribution: fio's bucket values near the percentiles.
    b = sorted((int(k), v) for k, v in job["read"]["clat_ns"]["bins"].items())
    assert b[0][0] <= job["read"]["clat_ns"]["min"] * 1.02 and b[-1][0] >= job["read"]["clat_ns"]["max"] * 0.98


@pytest.mark.skipif(shutil.which("fio_jsonplus_clat2csv") is None, reason="fio's fio_jsonplus_clat2csv is not installed")
def test_fio_jsonplus_clat2csv_reads_ssdlab_json_plus(fio_outputs):
    d, doc, _ = fio_outputs
    src = d / "plus.json"
    src.write_text(json.dumps(doc))
    script = shutil.which("fio_jsonplus_clat2csv")
    run = [sys.executable, script, str(src), str(d / "out.csv")]
    p = subprocess.run(run, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = (d / "out_job0.csv").read_text().splitlines()
    assert rows[0].startswith("nsec, read_slat_ns_count") and len(rows) > 10
    p = subprocess.run(run[:2] + ["--validate"] + run[2:], capture_output=True, text=True)
    assert p.returncode == 0 and "validated" in p.stdout, p.stdout + p.stderr


def test_trim_jobs_reach_the_drive_and_fio_json_reports_them(tmp_path):
    # fio's trimwrite: each 4 KiB block trimmed, then written; fio's JSON has a trim section.
    p = write(tmp_path, "[t]\nioengine=libaio\ndirect=1\nrw=trimwrite\nbs=4k\niodepth=4\nnumber_ios=2000\n")
    plan = api.load_jobfile(p, "tlc")
    results = plan.run()
    doc = api.fio_json(plan, results)
    job = doc["jobs"][0]
    assert (job["trim"]["total_ios"], job["write"]["total_ios"], job["read"]["total_ios"]) == (1000, 1000, 0)
    assert job["trim"]["io_bytes"] == 1000 * 4096
    s = results[0].summary
    assert s["flash"]["ftl"]["trims"] > 0
    assert list(results[0].latency.index) == ["write", "trim"]


def test_zbd_trims_reset_whole_zones(tmp_path):
    # fio's zbd mode turns a trim into a zone reset (zbd_do_io_u_trim): a zone-sized trim, each
    # taking a zone that holds data (the zns preset's zones are all full).
    p = write(tmp_path, "[t]\nzonemode=zbd\ndirect=1\nioengine=psync\nrw=randtrim\nbs=256M\nnumber_ios=20\n")
    [res] = api.load_jobfile(p, "zns").run()
    s = res.summary
    assert s["trim"]["ios"] == 20 and s["trim"]["bytes"] == 20 * (256 << 20)
    assert s["metrics"]["ftl.zone_resets"] == 20
    assert s["flash"]["nand"]["programs"] == 0, "a reset moves no data"
    bad = write(tmp_path, "[t]\nzonemode=zbd\ndirect=1\nrw=randtrim\nbs=1M\n")
    with pytest.raises(ssdlab.WorkloadError, match="the zone size"):
        api.load_jobfile(bad, "zns")


def test_num_range_lists_several_ranges_in_one_trim(tmp_path):
    # fio's num_range with io_uring_cmd: one Dataset Management command of 8 random 4 KiB
    # ranges, one I/O of 32 KiB to fio; the drive unmaps each range's unit.
    def run(ranges: int):
        p = write(tmp_path, f"[t]\nioengine=io_uring_cmd\ncmd_type=nvme\nrw=randtrim\nbs=4k\nnum_range={ranges}\niodepth=1\nnumber_ios=500\n")
        [res] = api.load_jobfile(p, "tlc").run()
        return res.summary
    one, eight = run(1), run(8)
    assert eight["trim"]["ios"] == 500 and eight["trim"]["bytes"] == 500 * 8 * 4096
    # The tlc preset is filled, so each range unmaps its unit unless an earlier draw took it.
    assert 3950 <= eight["flash"]["ftl"]["trims"] <= 4000 and 495 <= one["flash"]["ftl"]["trims"] <= 500
    # Each command carries 8 descriptors of 16 B instead of 1.
    assert eight["trim"]["latency_us"]["mean"] > one["trim"]["latency_us"]["mean"]


def test_zbd_trims_beside_writes_all_complete(tmp_path):
    # A trim that finds its zone's write lock taken waits for that write, and must be woken by
    # it (it once waited for a reset that never came, and the run ended with trims left).
    # On a clean drive the writer fills one zone (no resets), which the trims keep finding.
    p = write(tmp_path, "[global]\nzonemode=zbd\ndirect=1\n[w]\nioengine=libaio\nrw=write\nbs=64k\niodepth=4\nnumber_ios=3000\n"
                        "[t]\nioengine=psync\nrw=randtrim\nbs=256M\nnumber_ios=5\nstartdelay=2ms\n")
    [res] = api.load_jobfile(p, "zns", set={"ftl.precondition": "clean"}).run()
    s = res.summary
    # The first trim waits for the write under way and goes; one that then finds no zone
    # holding data ends the job, as in fio (without the wake-up: no trim at all).
    assert s["write"]["ios"] == 3000 and s["trim"]["ios"] >= 1 and s["metrics"]["ftl.zone_resets"] == s["trim"]["ios"]


def test_each_job_reports_its_own_runtime_iops_and_bandwidth(tmp_path, cli):
    # Issue 29, item 1: a QD1 and a QD32 job of 5,000 4 KiB random reads in one group both
    # reported the group's runtime and IOPS before. fio reports each job's own.
    text = "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nnumber_ios=5000\n[qd1]\niodepth=1\n[qd32]\niodepth=32\n"
    plan = api.load_jobfile(write(tmp_path, text), "tlc")
    doc = api.fio_json(plan, plan.run())
    qd1, qd32 = doc["jobs"]
    for j in (qd1, qd32):
        r = j["read"]
        assert r["total_ios"] == 5000 and r["runtime"] == j["job_runtime"]
        assert abs(r["iops"] * r["runtime"] / 1e3 / 5000 - 1.0) < 0.01, (j["jobname"], r["iops"], r["runtime"])
    assert qd1["job_runtime"] > 5 * qd32["job_runtime"] and qd32["read"]["iops"] > 5 * qd1["read"]["iops"]
    # The terse line and the "Per job" table carry the same.
    p = cli("run", str(tmp_path / "t.fio"), "--device", "tlc", "--output-format", "terse")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert [ln.split(";")[8] for ln in lines] == [str(qd1["read"]["runtime"]), str(qd32["read"]["runtime"])]


# Every job-ending rule, each job paced by rate_iops so that its runtime follows from the file
# alone (fio's null engine on the host, the simulated drive here).
ENDINGS = """[global]
ioengine=null
bs=4k
rw=randread
size=64m
{extra}
[count]
number_ios=2000
rate_iops=2000

[bigger]
number_ios=500
rate_iops=1000
bs=16k

[sized]
{new_group}size=4m
rate_iops=2000

[timed]
runtime=1
time_based
rate_iops=500

[looped]
size=1m
loops=2
rate_iops=1000
"""


def _fio_and_ours(tmp_path, text):
    job = tmp_path / "ends.fio"
    job.write_text(text)
    real = json.loads(subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True, check=True).stdout)
    plan = api.load_jobfile(job, "tlc")
    return real["jobs"], api.fio_json(plan, plan.run())["jobs"]


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (dev.py setup installs it as root)")
def test_per_job_numbers_follow_each_jobs_own_runtime_as_real_fio(tmp_path):
    # Issue 29, item 1, checked against real fio 3.33: each job's runtime, IOPS and bandwidth
    # (number_ios, size, runtime and loops ending them), as ratios to the first job's.
    real, ours = _fio_and_ours(tmp_path, ENDINGS.format(extra="", new_group=""))
    assert [j["jobname"] for j in real] == [j["jobname"] for j in ours]
    for key in ("runtime", "iops", "bw"):
        want = [j["read"][key] / real[0]["read"][key] for j in real]
        got = [j["read"][key] / ours[0]["read"][key] for j in ours]
        assert got == pytest.approx(want, rel=0.10), (key, want, got)
    assert [j["read"]["total_ios"] for j in ours] == [j["read"]["total_ios"] for j in real][:3] + [ours[3]["read"]["total_ios"], 512]
    assert abs(ours[3]["read"]["total_ios"] - real[3]["read"]["total_ios"]) <= 5  # time-based: within a few I/Os


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (dev.py setup installs it as root)")
def test_group_reporting_merges_each_group_as_real_fio(tmp_path):
    # Issue 29, item 2: group_reporting was ignored (five entries); fio reports one per group.
    real, ours = _fio_and_ours(tmp_path, ENDINGS.format(extra="group_reporting", new_group="new_group\n"))
    assert [(j["jobname"], j["groupid"]) for j in ours] == [(j["jobname"], j["groupid"]) for j in real] == [("count", 0), ("sized", 1)]
    for r, o in zip(real, ours):
        assert o["read"]["total_ios"] == pytest.approx(r["read"]["total_ios"], abs=5)
        assert o["read"]["clat_ns"]["N"] == o["read"]["total_ios"]
        for key in ("runtime", "iops", "bw", "io_kbytes"):
            assert o["read"][key] == pytest.approx(r["read"][key], rel=0.10), key
        assert o["job_runtime"] == pytest.approx(r["job_runtime"], rel=0.10)  # its jobs' runtimes summed


def test_a_group_merges_counts_latencies_and_depths(tmp_path):
    text = "[global]\ngroup_reporting\nrw=randread\nioengine=libaio\ndirect=1\n[a]\niodepth=1\nnumber_ios=2000\n[b]\niodepth=16\nnumber_ios=3000\n"
    plan = api.load_jobfile(write(tmp_path, text), "tlc")
    [res] = plan.run()
    [merged] = res.summary["jobs"]
    each = api.load_jobfile(write(tmp_path, text.replace("group_reporting\n", "")), "tlc").run()[0].summary["jobs"]
    assert merged["name"] == "a" and merged["members"] == [0, 1] and merged["ios"] == 5000
    assert merged["runtime_s"] == max(j["runtime_s"] for j in each)
    assert merged["jobs_runtime_s"] == pytest.approx(sum(j["runtime_s"] for j in each))
    r = merged["read"]["latency_us"]
    assert r["max"] == max(j["read"]["latency_us"]["max"] for j in each)
    assert r["mean"] == pytest.approx(sum(j["read"]["latency_us"]["mean"] * j["ios"] for j in each) / 5000)
    assert sum(merged["iodepth_level"]) == 5000
