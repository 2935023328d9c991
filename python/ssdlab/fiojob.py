"""fio job files: fio's INI dialect, read into ssdlab workloads.

What fio does and this reader follows: sections with `[global]` inheritance (a global section
applies to the jobs after it), bare flags, `${ENV}` substitution, `;`/`#` comments, size suffixes
in either case (`k`/`kB`/`KiB` = 1024, fio's default `kb_base`, read by the core's parser), `include` lines, `bssplit`, `rw`
offset modifiers, `numjobs`, and `stonewall`/`new_group`, which split the jobs into groups that run
one after another.

Each option is one of: mapped onto the simulated workload; ignored because it has no meaning for
a simulated device (listed once per file, never dropped silently); meaningful but not modelled yet
(an error naming the option, so a result is never silently wrong); or unknown (an error). Engines
that do not issue block I/O (network, object stores, file-metadata and CPU engines) are errors.

Leaves out: fio's arithmetic expressions and `$pagesize`-style variables (errors), per-file
options (`nrfiles`, `filename_format`), and device state carried across groups (each group runs
on a freshly preconditioned device).
"""

from __future__ import annotations

import difflib
import os
import random
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import _core
from .exceptions import WorkloadError, utf8_text

# The most jobs one section's `numjobs` gives (the core's workload.numjobs limit).
MAX_NUMJOBS = 1024
# The largest job file read, whether named or included.
INCLUDE_LIMIT = 4 << 20

# Engines whose I/O reaches a block device. Sync engines have one I/O in flight per job.
SYNC_ENGINES = {"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "sg"}
ASYNC_ENGINES = {
    "libaio", "io_uring", "io_uring_cmd", "posixaio", "windowsaio", "solarisaio", "spdk", "xnvme",
    "libblkio", "libzbc", "null", "cpp_null",
}
# Engines that bypass the page cache whatever `direct` says: user-space drivers, NVMe and SCSI
# pass-through, and the null engine (which does no I/O).
NO_PAGE_CACHE = {"spdk", "xnvme", "io_uring_cmd", "sg", "null", "cpp_null"}
# Engines that do something other than block I/O to a drive.
NON_BLOCK_ENGINES = {
    "net": "network sockets", "netsplice": "network sockets", "rdma": "RDMA verbs", "http": "HTTP object storage",
    "rados": "Ceph RADOS objects", "rbd": "Ceph RBD over the network", "nfs": "an NFS server", "gfapi": "GlusterFS",
    "libhdfs": "HDFS", "dfs": "DAOS", "nbd": "an NBD server", "libiscsi": "an iSCSI target", "cpuio": "CPU burning",
    "exec": "running programs", "e4defrag": "ext4 defragmentation", "falloc": "fallocate()", "ftruncate": "ftruncate()",
    "filecreate": "file creation", "filestat": "stat()", "filedelete": "file deletion", "dircreate": "directory creation",
    "dirstat": "directory stat()", "dirdelete": "directory deletion", "mtd": "raw MTD flash", "page_fault": "page faults",
    "libcufile": "GPUDirect Storage", "ime_psync": "DDN IME over the network", "ime_psyncv": "DDN IME over the network",
    "ime_aio": "DDN IME over the network", "dev-dax": "loads and stores to device-DAX persistent memory",
    "libpmem": "loads and stores to persistent memory (libpmem)", "libhipfile": "AMD GPU file I/O", "splice": "splice()", "guasi": "GUASI",
}

# Options with no meaning for a simulated device: where the file lives, data contents, logging,
# CPU placement, reporting.
IGNORED = {
    "filename", "directory", "filename_format", "unique_filename", "opendir", "lockfile", "nrfiles", "nr_files",
    "openfiles", "file_service_type", "create_on_open", "create_serialize", "allow_file_create", "unlink",
    "unlink_each_loop", "fallocate", "pre_read", "invalidate", "overwrite", "fill_device",
    "verify", "do_verify", "verify_pattern", "verify_interval", "verify_fatal", "verify_async", "verify_backlog",
    "verify_dump", "verify_write_sequence", "verify_only", "verify_offset", "verify_state_save", "verify_header_seed",
    "buffer_pattern", "buffer_compress_percentage", "buffer_compress_chunk", "scramble_buffers", "refill_buffers",
    "zero_buffers", "dedupe_percentage", "dedupe_mode", "dedupe_working_set_percentage", "dedupe_global",
    "write_lat_log", "write_bw_log", "write_iops_log", "write_hist_log", "log_avg_msec", "log_offset", "log_prio",
    "log_compression", "per_job_logs", "lat_percentiles", "clat_percentiles", "slat_percentiles", "percentile_list",
    "disable_lat", "disable_clat", "disable_slat", "disable_bw_measurement", "gtod_reduce", "gtod_cpu",
    "stats", "description", "name", "thread", "threads", "cpus_allowed", "cpus_allowed_policy", "cpumask",
    "numa_cpu_nodes", "numa_mem_policy", "nice", "prio", "prioclass", "mem", "iomem", "iomem_align", "hugepage-size",
    "exitall", "exitall_on_error", "exit_what", "continue_on_error", "ignore_error", "error_dump", "kb_base",
    "unit_base", "clocksource", "block_error_percentiles", "uid", "gid", "cgroup", "cgroup_weight", "std_redirect",
    "max_latency", "timeout", "skip_bad", "ioscheduler", "hipri", "fixedbufs", "registerfiles", "sqthread_poll",
    "sqthread_poll_cpu", "nonvectored", "uncached", "force_async", "cmd_type", "readfua",
    "writefua", "md_per_io_size", "pi_act", "pi_chk", "apptag", "apptag_mask", "busy_poll", "experimental_verify",
    "serialize_overlap", "replay_no_stall", "allrandrepeat", "random_generator", "ttl", "cpumode", "cpuload",
    "iodepth_batch", "iodepth_batch_submit", "iodepth_batch_complete", "iodepth_batch_complete_min",
    "iodepth_batch_complete_max", "iodepth_low", "io_submit_mode", "grace_time", "sync_file_range",
}
# Options with a meaning for the device that ssdlab does not model yet: an error, never dropped.
UNMODELLED = {
    "thinktime_spin", "thinktime_iotime",
    "flow_watermark", "percentage_random",
    "trim_percentage", "trim_backlog", "trim_verify_zero",
    "inplace", "donorname", "sprandom", "spr_op", "spr_num_regions", "verify_trim", "io_limit",
    "pingpong", "verb", "random_distribution_seed", "file_append", "bs_is_seq_rand", "rw_sequencer",
    "rwmixcycle", "time_based_limit",
}
MAPPED = {
    "rw", "readwrite", "rwmixread", "rwmixwrite", "bs", "blocksize", "bssplit", "iodepth", "numjobs", "size",
    "offset", "number_ios", "io_size", "runtime", "timeout", "time_based", "ramp_time", "rate_iops",
    "rate_process", "random_distribution", "randseed", "randrepeat", "norandommap", "direct", "ioengine",
    "stonewall", "wait_for_previous", "new_group", "group_reporting", "buffered", "offset_increment", "filesize", "blockalign", "ba",
    "thinktime", "thinktime_blocks", "rate", "bsrange", "blocksize_range", "loops",
    "rate_min", "ratemin", "rate_iops_min", "rate_cycle", "ratecycle", "startdelay",
    "latency_target", "latency_window", "latency_percentile", "latency_run", "exitall", "exitall_on_error", "exit_what", "atomic", "random_sequence_stride",
    "num_range", "fdp", "fdp_pli", "plids", "fdp_pli_select", "plid_select", "dataplacement", "data_placement", "write_mode", "sg_write_mode",
    "steadystate", "ss", "ss_dur", "ss_ramp", "ss_interval", "steadystate_duration", "steadystate_ramp_time",
    "steadystate_check_interval", "flow", "flow_id", "flow_sleep", "cmdprio", "cmdprio_class", "cmdprio_percentage", "cmdprio_bssplit", "cmdprio_hint",
    "zonemode", "zonesize", "zonerange", "zoneskip", "wait_for",
    "zonecapacity", "max_open_zones", "zone_reset_threshold", "zone_reset_frequency", "read_beyond_wp",
    "libblkio_driver", "libblkio_path", "libblkio_pre_connect_props", "libblkio_num_entries", "libblkio_queue_size",
    "libblkio_pre_start_props", "libblkio_vectored", "libblkio_write_zeroes_on_trim", "libblkio_wait_mode",
    "libblkio_force_enable_completion_eventfd", "fsync", "fdatasync", "end_fsync", "fsync_on_close", "sync",
    "hipri", "sqthread_poll", "iodepth_batch", "iodepth_batch_submit",
}
IGNORED -= MAPPED
# Options whose values are one number or size (where fio also accepts arithmetic).
NUMERIC = {"size", "offset", "io_size", "number_ios", "iodepth", "numjobs", "rwmixread", "rwmixwrite", "rate_iops", "randseed"}
KNOWN = MAPPED | IGNORED | UNMODELLED


@dataclass
class Option:
    key: str
    value: Optional[str]
    where: str  # "file:line"
    problem: Optional[str] = None  # why the value cannot be read (reported after the engine's check)


@dataclass
class Job:
    """One job section after `[global]` inheritance, before `numjobs` expansion."""

    name: str
    where: str
    options: dict[str, Option] = field(default_factory=dict)


@dataclass
class JobFile:
    path: str
    jobs: list[Job]
    ignored: list[str]
    global_options: dict[str, str] = field(default_factory=dict)  # `[global]` as written (fio's "global options")


@dataclass
class Group:
    """Jobs that run together (fio's reporting group)."""

    groupid: int
    jobs: list[dict]  # `[[workload.jobs]]` entries, numjobs already expanded
    workload: dict  # group-wide settings (ramp_time, randseed)
    sources: list[Job] = field(default_factory=list)  # the section each entry came from
    notes: list[str] = field(default_factory=list)  # how options were mapped, for the reader
    global_options: dict[str, str] = field(default_factory=dict)  # the file's `[global]`

    def where(self, entry: int, key: str) -> str:
        """`file:line` of the option behind `workload.jobs[entry].key` (or of the section)."""
        job = self.sources[entry]
        for name in (key, {"bs": "blocksize", "rw": "readwrite", "runtime": "timeout"}.get(key, "")):
            if name in job.options:
                return job.options[name].where
        return job.where


def _err(where: str, msg: str) -> WorkloadError:
    return WorkloadError(f"{where}: {msg}")


def parse_size(text: str, where: str, key: str) -> int:
    """Bytes from a job-file size, by the core's parser in fio's convention (`4k`, `4kB` and
    `4KiB` are all 4096)."""
    try:
        return _core.parse_size(text, fio=True)
    except ValueError as e:
        raise _err(where, f"{key}={text!r}: not a size: {e}") from None


def parse_time(text: str, where: str, key: str, unit: str = "s") -> int:
    """Picoseconds from a job-file time, by the core's parser in fio's convention: a bare number
    counts in `unit` (fio's seconds, or microseconds for `thinktime`), `m` is minutes."""
    try:
        return _core.parse_time(text, fio=True, fio_unit=unit)
    except ValueError as e:
        raise _err(where, f"{key}={text!r}: not a time: {e}") from None


def _seconds(o: Option) -> str:
    """A job-file time option as a config time in seconds."""
    return f"{parse_time(o.value or '', o.where, o.key) / 1e12}s"


def _substitute(text: str, env: Mapping[str, str], where: str) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name not in env:
            raise _err(where, f"${{{name}}} is not set in the environment")
        return env[name]

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", sub, text)


def _lines(path: Path, env: Mapping[str, str], depth: int = 0, text: Optional[str] = None) -> Iterator[tuple[str, str]]:
    if text is None:
        # At most the limit, whatever size the file reports (/proc files report 0), and never
        # a file that is not text: its contents are not quoted back.
        try:
            with open(path, "rb") as f:
                data = f.read(INCLUDE_LIMIT + 1)
        except OSError as e:
            raise WorkloadError(f"{path}: cannot read job file: {e.strerror or e}") from None
        except ValueError:  # a NUL byte or a lone surrogate: no file has that name
            raise WorkloadError(f"{str(path)!r}: not a valid file name") from None
        if len(data) > INCLUDE_LIMIT:
            raise WorkloadError(f"{path}: more than {INCLUDE_LIMIT} bytes; a job file is at most {INCLUDE_LIMIT} bytes")
        if b"\0" in data:
            raise WorkloadError(f"{path}: not a job file (it holds NUL bytes)")
        text = utf8_text(data, str(path), WorkloadError)
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{n}"
        s = line.strip()
        if not s or s[0] in ";#":
            continue
        s = re.split(r"\s[;#]", s, maxsplit=1)[0].strip()
        if s.startswith("include ") and not s.startswith("["):
            if depth > 8:
                raise _err(where, "include nested too deeply")
            inc = Path(s.split(None, 1)[1].strip())
            inc = inc if inc.is_absolute() else path.parent / inc
            try:
                st = inc.stat()
            except OSError as e:
                raise _err(where, f"include {inc}: {e.strerror or e}") from None
            except ValueError:  # a NUL byte or a lone surrogate: no file has that name
                raise _err(where, f"include {str(inc)!r}: not a valid file name") from None
            # Only regular files of job-file size (never /dev/zero or a device).
            if not stat.S_ISREG(st.st_mode):
                raise _err(where, f"include {inc}: not a regular file")
            if st.st_size > INCLUDE_LIMIT:
                raise _err(where, f"include {inc}: {st.st_size} bytes; a job file is at most {INCLUDE_LIMIT} bytes")
            yield from _lines(inc, env, depth + 1)
            continue
        yield where, _substitute(s, env, where)


def from_args(args: list[str]) -> str:
    """fio's command-line form (`--name=a --rw=read --name=b ...`) as job-file text: options
    before the first `--name` are global, and each `--name` starts a job."""
    lines = ["[global]"]
    named = False
    for a in args:
        if not a.startswith("--") or len(a) < 3:
            raise WorkloadError(f"command line: {a!r}: fio options are written --key=value or --flag")
        key, eq, value = a[2:].partition("=")
        if key == "name":
            lines.append(f"[{value}]")
            named = True
            continue
        lines.append(f"{key}={value}" if eq else key)
    if not named:
        lines.append("[job]")
    return "\n".join(lines) + "\n"


def read(path: str | os.PathLike, env: Optional[Mapping[str, str]] = None, text: Optional[str] = None) -> JobFile:
    """Parses a job file (or `text` under the name `path`) into jobs with their options,
    `[global]` applied."""
    env = os.environ if env is None else env
    p = Path(path)
    globals_: dict[str, Option] = {}
    jobs: list[Job] = []
    current: Optional[dict[str, Option]] = None
    ignored: list[str] = []
    raw_globals: dict[str, str] = {}
    for where, s in _lines(p, env, text=text):
        if s.startswith("["):
            if not s.endswith("]") or len(s) < 3:
                raise _err(where, f"{s!r}: a section header is [name]")
            name = s[1:-1].strip()
            if name == "global":
                current = globals_
            else:
                jobs.append(Job(name, where, dict(globals_)))
                current = jobs[-1].options
            continue
        if current is None:
            raise _err(where, f"{s!r}: an option before any [section]")
        key, eq, value = s.partition("=")
        key = key.strip().lower()
        opt = Option(key, value.strip() if eq else None, where)
        if current is globals_:
            raw_globals[key] = opt.value if opt.value is not None else ""
        if key in IGNORED:
            if key not in ignored:
                ignored.append(key)
            continue
        arithmetic = key in NUMERIC and re.search(r"\d\s*[*/+-]\s*\d", opt.value or "")
        if opt.value is not None and ("$" in opt.value or arithmetic):
            # Reported once the job's engine is known: a non-block engine's error comes first.
            opt.problem = f"{s!r}: fio's $-variables and arithmetic expressions are not supported"
        current[key] = opt
    if not jobs:
        raise WorkloadError(f"{p}: no job sections")
    return JobFile(str(p), jobs, ignored, raw_globals)


def _int(o: Option, lo: int = 0) -> int:
    try:
        v = int((o.value or "").strip())
    except ValueError:
        raise _err(o.where, f"{o.key}={o.value!r}: not an integer") from None
    if v < lo:
        raise _err(o.where, f"{o.key}={v}: must be >= {lo}")
    return v


def _bool(o: Option) -> bool:
    if o.value is None:
        return True
    if o.value.strip() in ("0", "1", "true", "false"):
        return o.value.strip() in ("1", "true")
    raise _err(o.where, f"{o.key}={o.value!r}: must be 0 or 1")


def _bs_pair(o: Option) -> str:
    parts = [x.strip() for x in (o.value or "").split(",")]
    if not 1 <= len(parts) <= 3 or not parts[0]:
        raise _err(o.where, f"{o.key}={o.value!r}: want SIZE or READ,WRITE[,TRIM]")
    sizes = [parse_size(x, o.where, o.key) if x else None for x in parts]
    read = sizes[0]
    write = sizes[1] if len(sizes) > 1 and sizes[1] is not None else read
    # fio's HOWTO: `8k,32k` trims 32k, `8k,32k,` leaves trims at the default (4 KiB).
    trim = write if len(sizes) < 3 else sizes[2] if sizes[2] is not None else 4096
    return f"{read},{write}" + (f",{trim}" if trim != write else "")


def _sizes(out: dict) -> tuple[int, int]:
    """The job's read and write block sizes so far (fio's default 4 KiB)."""
    r, w = out.get("bs", "4096,4096").split(",")[:2]
    return int(r), int(w)


def _region(o: Option) -> int | Percent | ZoneCount:
    """`size`/`offset`/`offset_increment`: bytes, fio's share of the device (`N%`, an integer
    0-100) or a number of zones (`Nz`), resolved against the device when it is known."""
    v = (o.value or "").strip()
    if v.endswith("%"):
        try:
            pct = int(v[:-1])
        except ValueError:
            raise _err(o.where, f"{o.key}={v}: a share of the device is a whole percentage, such as 30%") from None
        if not 0 <= pct <= 100:
            raise _err(o.where, f"{o.key}={v}: a share of the device must be between 0% and 100%")
        return Percent(pct, o.where)
    if v.endswith("z") and v[:-1].strip().isdigit():
        return ZoneCount(int(v[:-1]), o.where)  # fio: a number of zones
    return parse_size(v, o.where, o.key)


@dataclass(frozen=True)
class ZoneCount:
    """fio's `Nz`: N zones of the (zoned) device."""

    n: int
    where: str


@dataclass(frozen=True)
class Percent:
    """fio's `N%` of the device (`size`, `offset`, `offset_increment`)."""

    pct: int
    where: str


def _pair(o: Option, parse: Callable[[str], int]) -> tuple[int, int]:
    """fio's `read,write[,trim]` values: one value sets both, `a,` reads only, `,b` writes only
    (the trim value is left out: the core counts trims with the writes; `_job_settings` refuses
    a trim value that differs from the write value for a job that trims)."""
    parts = [x.strip() for x in (o.value or "").split(",")]
    if len(parts) > 3 or not any(parts):
        raise _err(o.where, f"{o.key}={o.value!r}: want VALUE or READ,WRITE[,TRIM]")
    if len(parts) == 1:
        v = parse(parts[0])
        return v, v
    read = parse(parts[0]) if parts[0] else 0
    write = parse(parts[1]) if parts[1] else 0
    return read, write


def _rates(o: Option) -> str:
    """A rate option in bytes per second (fio: a bare number is bytes, `k` is 1024) as the core's
    `read,write` rates."""
    r, w = _pair(o, lambda x: parse_size(x, o.where, o.key))
    return ",".join(f"{v}B/s" if v else "" for v in (r, w))


def _iops(o: Option) -> str:
    r, w = _pair(o, lambda x: _int(Option(o.key, x, o.where)))
    return ",".join(str(v) if v else "" for v in (r, w))


def _job_settings(job: Job, notes: list[str]) -> tuple[dict, dict]:
    """The `[[workload.jobs]]` entry for one job section, and its group-wide settings; what the
    reader should know about the mapping goes to `notes`."""
    o = job.options
    out: dict = {"name": job.name}
    group: dict = {}
    if "readwrite" in o and "rw" not in o:
        o["rw"] = o["readwrite"]
    engine = (o["ioengine"].value or "").strip() if "ioengine" in o else "psync"
    engine = engine.split(":", 1)[0]
    if engine in NON_BLOCK_ENGINES:
        raise _err(o["ioengine"].where, f"ioengine={engine} does {NON_BLOCK_ENGINES[engine]}, not block I/O to a drive")
    if engine not in SYNC_ENGINES | ASYNC_ENGINES:
        raise _err(o["ioengine"].where, f"ioengine={engine!r} is not an engine ssdlab knows")
    if engine == "libblkio":
        driver = (o["libblkio_driver"].value or "").strip() if "libblkio_driver" in o else ""
        where = o["libblkio_driver"].where if "libblkio_driver" in o else job.where
        if driver == "virtio-blk-vfio-pci":
            # A user-space driver of a virtio-blk PCI function: the device must present
            # virtqueues (nvme.interface = "virtio-blk"), checked against the device later.
            out["needs_interface"] = ("virtio-blk", where)
        elif driver not in ("io_uring", "nvme-io_uring"):
            raise _err(
                where,
                f"libblkio_driver={driver or '(unset)'}: the io_uring, nvme-io_uring and virtio-blk-vfio-pci drivers are modelled"
                " (vhost-user and vhost-vdpa reach a software backend, not a drive)",
            )
    _engine(o, engine, out)
    for key in o:  # engine-specific options are unknown here, but the engine's error comes first
        if key not in KNOWN:
            close = difflib.get_close_matches(key, sorted(KNOWN), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _err(o[key].where, f"unknown fio option {key!r}{hint}")
    for opt in o.values():
        if opt.problem:
            raise _err(opt.where, opt.problem)
    for key in o:
        if key in UNMODELLED:
            v = o[key].value
            shown = key if v is None else f"{key}={v}"
            raise _err(o[key].where, f"{shown}: has a meaning for the device that ssdlab does not model yet")
    if "rw" in o:
        rw = (o["rw"].value or "").strip().lower()
        rw, _, modifier = rw.partition(":")
        names = {"read": "read", "write": "write", "randread": "randread", "randwrite": "randwrite",
                 "randrw": "randrw", "rw": "rw", "readwrite": "rw", "trim": "trim", "randtrim": "randtrim",
                 "trimwrite": "trimwrite", "randtrimwrite": "randtrimwrite"}
        if rw not in names:
            raise _err(o["rw"].where, f"rw={rw!r}: must be one of {', '.join(sorted(set(names)))}")
        if modifier:
            if rw.startswith("rand"):
                raise _err(o["rw"].where, f"rw={rw}:{modifier}: sequential runs inside random jobs are not modelled yet")
            m = modifier.strip()
            sign = -1 if m.startswith("-") else 1
            out["rw_skip"] = sign * parse_size(m.lstrip("+-"), o["rw"].where, "rw offset modifier")
        out["rw"] = names[rw]
        if "trim" in rw:
            for key in ("rate", "rate_min", "ratemin", "rate_iops", "rate_iops_min"):
                parts = [x.strip() for x in (o[key].value or "").split(",")] if key in o else []
                if len(parts) == 3 and parts[2] != parts[1]:
                    raise _err(o[key].where, f"{key}={o[key].value}: a trim limit of its own is not modelled (ssdlab counts trims against the write limit)")
    if "rwmixread" in o:
        out["rwmixread"] = _int(o["rwmixread"])
    elif "rwmixwrite" in o:
        out["rwmixread"] = 100 - _int(o["rwmixwrite"])
    for key in ("bs", "blocksize"):
        if key in o:
            out["bs"] = _bs_pair(o[key])
    if "bssplit" in o:
        # Sizes in fio's units, as exact bytes for the core.
        where, value = o["bssplit"].where, o["bssplit"].value or ""
        lists = []
        for part in value.split(","):
            entries = []
            for item in (i.strip() for i in part.split(":")):
                if not item:
                    continue
                size, sep, pct = item.partition("/")
                entries.append(f"{parse_size(size, where, 'bssplit')}/{pct}" if sep else item)
            lists.append(":".join(entries))
        out["bssplit"] = ",".join(lists)
    for key in ("bsrange", "blocksize_range"):
        if key in o:
            where, value = o[key].where, (o[key].value or "").strip()
            ranges = []
            for part in value.split(",")[:2]:
                lo, sep, hi = part.partition("-")
                if not sep:
                    raise _err(where, f"{key}={value}: a range is min-max")
                ranges.append((parse_size(lo, where, key), parse_size(hi, where, key)))
            if len(ranges) == 1:
                ranges.append(ranges[0])
            if all(a == b for a, b in ranges):
                out["bs"] = f"{ranges[0][0]},{ranges[1][0]}"
            else:
                out["bsrange"] = ",".join(f"{a}-{b}" for a, b in ranges)
    if "loops" in o:
        out["loops"] = _int(o["loops"], 1)
    if "zonemode" in o and (o["zonemode"].value or "").strip() == "zbd":
        # fio's zoned block device mode, on a zoned drive (checked against the device later).
        out["zbd"] = True
        if "zonesize" in o:
            out["zbd_zonesize"] = (parse_size(o["zonesize"].value or "", o["zonesize"].where, "zonesize"), o["zonesize"].where)
        if "zonecapacity" in o and "zonesize" in o and parse_size(o["zonecapacity"].value or "", o["zonecapacity"].where, "zonecapacity") != out["zbd_zonesize"][0]:
            raise _err(o["zonecapacity"].where, f"zonecapacity={o['zonecapacity'].value}: zones with a capacity below their size are not modelled")
        if "max_open_zones" in o:
            out["max_open_zones"] = _int(o["max_open_zones"])
        if "read_beyond_wp" in o:
            out["read_beyond_wp"] = _bool(o["read_beyond_wp"])
        for key in ("zone_reset_threshold", "zone_reset_frequency"):
            if key in o:
                try:
                    out[key] = float((o[key].value or "").strip())
                except ValueError:
                    raise _err(o[key].where, f"{key}={o[key].value!r}: not a number") from None
    elif "zonemode" in o or "zonesize" in o:
        mode = (o["zonemode"].value or "").strip() if "zonemode" in o else "strided"
        if mode not in ("none", "strided"):
            raise _err(o["zonemode"].where, f"zonemode={mode}: must be none, strided or zbd")
        if mode == "strided" and "zonesize" in o:
            zsize = parse_size(o["zonesize"].value or "", o["zonesize"].where, "zonesize")
            zrange = parse_size(o["zonerange"].value or "", o["zonerange"].where, "zonerange") if "zonerange" in o else zsize
            if zrange != zsize:
                raise _err(o["zonerange"].where, f"zonerange={o['zonerange'].value}: only zones as large as their range (zonerange = zonesize) are modelled")
            if (out.get("rw") or "read").startswith("rand"):
                raise _err(o["zonesize"].where, "zonesize with random I/O: strided zones are modelled for sequential jobs")
            out["zonesize"] = zsize
            if "zoneskip" in o:
                out["zoneskip"] = parse_size(o["zoneskip"].value or "", o["zoneskip"].where, "zoneskip")
    depth = _int(o["iodepth"], 1) if "iodepth" in o else 1
    out["iodepth"] = 1 if engine in SYNC_ENGINES else depth
    if "size" in o:
        out["size"] = _region(o["size"])
    if "thinktime" in o:
        # fio's thinktime is in microseconds unless it has a unit.
        ns = round(parse_time(o["thinktime"].value or "", o["thinktime"].where, "thinktime", unit="us") / 1e3)
        if "thinktime_blocks" in o and _int(o["thinktime_blocks"], 1) != 1:
            raise _err(o["thinktime_blocks"].where, f"thinktime_blocks={o['thinktime_blocks'].value}: only a pause after every I/O (1) is modelled")
        if "rate_iops" in o:
            raise _err(o["thinktime"].where, "thinktime with rate_iops: thinking applies to closed-loop jobs")
        out["thinktime"] = f"{ns}ns"
    if "filesize" in o and "size" not in o:
        # One file per job (nrfiles is ignored): its size is the job's region.
        v = (o["filesize"].value or "").strip()
        if "-" in v or ":" in v:
            raise _err(o["filesize"].where, f"filesize={v}: a range of file sizes is not modelled; give one size")
        out["size"] = parse_size(v, o["filesize"].where, "filesize")
    for key in ("blockalign", "ba"):
        if key in o:
            parts = [p.strip() for p in (o[key].value or "").split(",")]
            aligns = {parse_size(p, o[key].where, key) for p in parts if p}
            if len(aligns) != 1:
                raise _err(o[key].where, f"{key}={o[key].value}: one alignment for reads and writes is modelled")
            align = aligns.pop()
            if align == 0 or align % 512:
                raise _err(o[key].where, f"{key}={o[key].value}: offsets align to multiples of 512 B")
            out["blockalign"] = align
    if "offset" in o:
        out["offset"] = _region(o["offset"])
    if "number_ios" in o:
        out["number_ios"] = _int(o["number_ios"], 1)
    if "io_size" in o:
        total = parse_size(o["io_size"].value or "", o["io_size"].where, "io_size")
        if "bssplit" in o or "bsrange" in out:
            raise _err(o["io_size"].where, "io_size with a mix of block sizes: give number_ios instead")
        bs = _sizes(out)[0]
        out.setdefault("number_ios", max(1, total // max(bs, 1)))  # bs=0: the core refuses it
    runtime_key = "runtime" if "runtime" in o else "timeout" if "timeout" in o else None
    if runtime_key:
        out["runtime"] = _seconds(o[runtime_key])
    if "time_based" in o and _bool(o["time_based"]) and not runtime_key:
        # fio: "time_based requires a runtime/timeout setting", and it turns time_based off.
        notes.append(f"{o['time_based'].where}: time_based without runtime: fio turns it off and runs the job by its size, as ssdlab does")
    if "rate_iops" in o:
        v = (o["rate_iops"].value or "").split(",")[0].strip()
        out["rate_iops"] = _int(Option("rate_iops", v, o["rate_iops"].where))
    if "rate" in o:
        if "rate_iops" in o:
            raise _err(o["rate"].where, "rate with rate_iops: fio refuses both (rate and rate_iops are mutually exclusive)")
        caps = _rates(o["rate"])
        if caps != ",":
            out["rate"] = caps
    mins = [k for k in ("rate_min", "ratemin") if k in o]
    if mins:
        out["rate_min"] = _rates(o[mins[0]])
    if "rate_iops_min" in o:
        out["rate_iops_min"] = _iops(o["rate_iops_min"])
    for key in ("rate_cycle", "ratecycle"):
        if key in o:
            out["rate_cycle"] = f"{_int(o[key], 1)}ms"  # fio's rate_cycle is in milliseconds
    if "latency_target" in o:
        # fio's latency times are in microseconds unless they have a unit.
        target = parse_time(o["latency_target"].value or "", o["latency_target"].where, "latency_target", unit="us")
        if target > 0:
            out["latency_target"] = f"{target}ps"
            if "latency_window" in o:
                out["latency_window"] = f"{parse_time(o['latency_window'].value or '', o['latency_window'].where, 'latency_window', unit='us')}ps"
            if "latency_percentile" in o:
                try:
                    out["latency_percentile"] = float((o["latency_percentile"].value or "").strip().rstrip("%"))
                except ValueError:
                    raise _err(o["latency_percentile"].where, f"latency_percentile={o['latency_percentile'].value!r}: not a number") from None
            if "latency_run" in o:
                out["latency_run"] = _bool(o["latency_run"])
    if "rate_process" in o:
        out["rate_process"] = (o["rate_process"].value or "").strip()
    if "random_distribution" in o:
        v = (o["random_distribution"].value or "").strip()
        if v.split(":")[0] not in ("random", "zipf", "pareto", "zoned", "sequence"):
            raise _err(o["random_distribution"].where, f"random_distribution={v}: only random, zipf:θ, pareto:h, zoned: and sequence: are modelled (zoned_abs and normal are not)")
        out["random_distribution"] = v
    if "random_sequence_stride" in o:
        out["random_sequence_stride"] = _bool(o["random_sequence_stride"])
    # fio's default is buffered I/O (direct=0, buffered=1): through the host's page cache.
    if "direct" in o:
        direct = _bool(o["direct"])
    elif "buffered" in o:
        direct = not _bool(o["buffered"])
    else:
        direct = False
    sync = (o["sync"].value or "1").strip().lower() if "sync" in o else "none"
    if sync not in ("none", "0", "sync", "1", "dsync"):
        raise _err(o["sync"].where, f"sync={sync}: must be none, 0, sync, 1 or dsync")
    if engine not in NO_PAGE_CACHE and not direct:
        out["direct"] = False
        if engine == "libaio" and out["iodepth"] > 1:
            # io_submit() does buffered I/O in the caller before it returns.
            notes.append(f"{job.where}: libaio submits buffered I/O synchronously, so iodepth={out['iodepth']} runs as 1 (as fio does)")
            out["iodepth"] = 1
            out.pop("iodepth_batch", None)
        if sync not in ("none", "0"):
            out["fsync"] = 1  # O_SYNC / O_DSYNC: each write returns once its pages are on the device
    elif sync not in ("none", "0"):
        raise _err(o["sync"].where, f"sync={sync} with direct I/O: FUA writes are not modelled yet")
    for key in ("fsync", "fdatasync"):
        if key in o:
            n = _int(o[key])
            if n:
                out["fsync"] = min(n, out.get("fsync", n))
    for key in ("end_fsync", "fsync_on_close"):
        if key in o and _bool(o[key]):
            out["end_fsync"] = True
    if "flow" in o:
        weight = _int(o["flow"])
        if weight:
            if "rate_iops" in out:
                raise _err(o["flow"].where, f"flow={weight} with a rate: flow control applies to closed-loop jobs")
            out["flow"] = weight
            if "flow_id" in o:
                out["flow_id"] = _int(o["flow_id"])
            if "flow_sleep" in o:
                # fio's flow_sleep is in microseconds.
                out["flow_sleep"] = f"{_int(o['flow_sleep'])}us"
    if "atomic" in o and _bool(o["atomic"]) and out.get("rw", "read") not in ("read", "randread"):
        # fio sets RWF_ATOMIC on pvsync2, libaio and io_uring writes only (FIO_ATOMICWRITES).
        if engine not in ("pvsync2", "libaio", "io_uring"):
            raise _err(o["atomic"].where, f"atomic=1 with ioengine={engine}: fio: engine does not support atomic writes")
        out["atomic"] = True
    if "num_range" in o:
        num_range = _int(o["num_range"])
        if not 1 <= num_range <= 256:
            raise _err(o["num_range"].where, f"num_range={num_range}: must be between 1 and 256 (fio's MAX_TRIM_RANGE)")
        if num_range > 1 and "trim" in out.get("rw", ""):
            # fio lists several ranges in one command only where the engine can
            # (FIO_MULTI_RANGE_TRIM: io_uring_cmd's NVMe Dataset Management).
            if engine != "io_uring_cmd":
                raise _err(o["num_range"].where, f"num_range={num_range} with ioengine={engine}: fio: can't use multiple ranges with this IO engine")
            out["trim_ranges"] = num_range
    _placement(o, out)
    _write_mode(o, out, notes)
    prio = [k for k in ("cmdprio_percentage", "cmdprio_bssplit") if k in o]
    if prio:
        # Linux passes an I/O's priority to the I/O scheduler, not to an NVMe drive (NVMe has
        # no per-command priority), and NVMe queues default to the none scheduler.
        notes.append(f"{o[prio[0]].where}: {prio[0]}: I/O priorities do not reach an NVMe drive and change nothing under the none scheduler; the job runs without them (no per-priority latencies)")
    if "ramp_time" in o:
        group["ramp_time"] = _seconds(o["ramp_time"])
    group.update(_steady_state(o))
    if "group_reporting" in o and _bool(o["group_reporting"]):
        # fio merges each reporting group's jobs into one entry (stat.c's sum_thread_stats).
        group["stats.group_reporting"] = True
    if "randseed" in o:
        group["randseed"] = _int(o["randseed"])
    for key in ("randrepeat", "norandommap"):  # ssdlab is always repeatable; offsets are drawn with replacement
        if key in o:
            _bool(o[key])
    return out, group


# fio's engines as the host's I/O engines (`host.engine`); the others keep the host's.
ENGINES = {
    "psync": "psync", "sync": "psync", "pvsync": "psync", "pvsync2": "psync", "vsync": "psync",
    "libaio": "libaio", "io_uring": "io_uring", "io_uring_cmd": "io_uring", "spdk": "spdk",
    "null": "null", "cpp_null": "null",  # completes in the engine: no device sees the I/O
}


def _engine(o: dict, engine: str, out: dict) -> None:
    """The job's I/O engine (`ioengine`, with io_uring's `hipri` and `sqthread_poll`) and the
    I/Os it submits per system call (`iodepth_batch_submit`; 0 means `iodepth`)."""
    name = ENGINES.get(engine)
    hipri = "hipri" in o and _bool(o["hipri"])
    sqpoll = "sqthread_poll" in o and _bool(o["sqthread_poll"])
    if name == "io_uring":
        if hipri and sqpoll:
            raise _err(o["sqthread_poll"].where, "sqthread_poll with hipri: the SQ thread polling for completions is not modelled yet (each alone is)")
        name = "io_uring-hipri" if hipri else "io_uring-sqpoll" if sqpoll else name
    elif hipri and name == "psync":
        raise _err(o["hipri"].where, f"hipri with ioengine={engine}: polled synchronous I/O (RWF_HIPRI) is not modelled yet; io_uring with hipri is")
    if name is not None:
        out["ioengine"] = name
    key = next((k for k in ("iodepth_batch_submit", "iodepth_batch") if k in o), None)
    if key is not None:
        n = _int(o[key])
        if n < 0:
            raise _err(o[key].where, f"{key}={n}: must be at least 0 (0 means iodepth)")
        depth = _int(o["iodepth"], 1) if "iodepth" in o and engine not in SYNC_ENGINES else 1
        out["iodepth_batch"] = max(1, min(n or depth, depth))


def _placement(o: dict, out: dict) -> None:
    """fio's FDP placement (`fdp=1` or `dataplacement=fdp`): the placement identifiers a job's
    writes name (`fdp_pli`/`plids`, ranges such as 0,2-4; by default every handle of the
    device), picked in turn or at random (`fdp_pli_select`)."""
    mode = next((o[k] for k in ("dataplacement", "data_placement") if k in o), None)
    fdp = ("fdp" in o and _bool(o["fdp"])) or (mode is not None and (mode.value or "").strip() == "fdp")
    if mode is not None and (mode.value or "").strip() == "streams":
        raise _err(mode.where, "dataplacement=streams: write streams are not modelled (FDP is)")
    if not fdp:
        return
    key = next((k for k in ("fdp_pli", "plids") if k in o), None)
    if key is None:
        out["placement_ids"] = AllPids()
    else:
        ids: list[int] = []
        for part in (o[key].value or "").split(","):
            lo, sep, hi = part.strip().partition("-")
            try:
                a, b = int(lo), int(hi) if sep else int(lo)
            except ValueError:
                raise _err(o[key].where, f"{key}={o[key].value}: want indices such as 0,2-4") from None
            ids.extend(range(a, b + 1))
        if not ids or len(ids) > 128:
            raise _err(o[key].where, f"{key}={o[key].value}: name 1 to 128 placement identifiers (fio's FIO_MAX_DP_IDS)")
        out["placement_ids"] = sorted(ids)
    sel = next((o[k] for k in ("fdp_pli_select", "plid_select") if k in o), None)
    if sel is not None:
        v = (sel.value or "").strip()
        if v not in ("roundrobin", "random"):
            raise _err(sel.where, f"{sel.key}={v}: roundrobin or random (a scheme file is not modelled)")
        out["placement_select"] = v


# SCSI commands of fio's sg engine (sg_write_mode) as the NVMe command each is modelled by.
SG_WRITE_MODES = {"write": "write", "verify_bytchk_00": "verify", "verify_bytchk_01": "compare", "verify_bytchk_11": "compare-block", "write_same_ndob": "zeroes"}


def _write_mode(o: dict, out: dict, notes: list[str]) -> None:
    """io_uring_cmd's `write_mode` (write, zeroes, uncor, verify, or shares such as
    write/60:zeroes/40) and the sg engine's `sg_write_mode`, as the commands a job's writes are."""
    key = next((k for k in ("write_mode", "sg_write_mode") if k in o), None)
    if key is None:
        return
    where, v = o[key].where, (o[key].value or "").strip()
    if key == "sg_write_mode":
        if v not in SG_WRITE_MODES:
            raise _err(where, f"sg_write_mode={v}: of the sg engine's modes, {', '.join(SG_WRITE_MODES)} are modelled (WRITE SAME with data, WRITE AND VERIFY and WRITE STREAM are not)")
        mode = SG_WRITE_MODES[v]
        found = "; what a comparison finds is not modelled (ssdlab keeps no data)" if "verify" in v else ""
        notes.append(f"{where}: sg_write_mode={v} runs as the NVMe command it amounts to ({mode}){found}")
    else:
        mode = v
        if any(part.split("/")[0].strip() == "verify" for part in v.split(":")):
            notes.append(f"{where}: write_mode={v}: a Verify reads the media; what it finds is not modelled (ssdlab keeps no data)")
    if mode != "write":
        out["write_mode"] = mode


@dataclass(frozen=True)
class AllPids:
    """fio's default placement list: every handle the device reports."""


# fio's steady-state metrics, as columns of the device's time series.
SS_METRICS = {"iops": "iops", "bw": "bandwidth_mib_s", "lat": "lat_mean_us"}


def _steady_state(o: dict) -> dict:
    """fio's `ss=<metric>[_slope]:N%` with `ss_dur` (the window), `ss_ramp` and `ss_interval`
    (one second by default) as the steady-state detector of the stats observer, which stops
    the group when the group's rounds pass (fio with `group_reporting`)."""
    key = next((k for k in ("ss", "steadystate") if k in o), None)
    dur = next((o[k] for k in ("ss_dur", "steadystate_duration") if k in o), None)
    if key is None:
        return {}
    where, value = o[key].where, (o[key].value or "").strip()
    metric, sep, limit = value.partition(":")
    base, _, slope = metric.lower().partition("_")
    if base not in SS_METRICS or slope not in ("", "slope"):
        raise _err(where, f"{key}={value}: the metric is iops, bw or lat, with or without _slope")
    if not (sep and limit.endswith("%")):
        raise _err(where, f"{key}={value}: only a limit in per cent of the mean (such as iops:10%) is modelled")
    try:
        pct = float(limit[:-1])
    except ValueError:
        raise _err(where, f"{key}={value}: {limit!r} is not a percentage") from None
    if not pct > 0:
        raise _err(where, f"{key}={value}: the limit must be above 0 %")
    if dur is None:
        return {}  # fio: without ss_dur, steady-state detection is off
    interval_key = next((k for k in ("ss_interval", "steadystate_check_interval") if k in o), None)
    interval = parse_time(o[interval_key].value or "", o[interval_key].where, interval_key) if interval_key else 10**12
    window = parse_time(dur.value or "", dur.where, dur.key)
    if interval <= 0 or window < 2 * interval:
        raise _err(dur.where, f"{dur.key}={dur.value}: the window needs at least two rounds of {interval / 1e12:g} s")
    out = {
        "stats.interval": f"{interval / 1e12}s", "stats.steady_metric": SS_METRICS[base], "stats.steady_rule": "slope" if slope else "deviation",
        "stats.steady_limit": pct / 100.0, "stats.steady_window": int(window // interval), "stats.steady_stop": True,
    }
    ramp_key = next((k for k in ("ss_ramp", "steadystate_ramp_time") if k in o), None)
    if ramp_key:
        # fio starts recording one second after ss_ramp.
        out["stats.steady_ramp"] = f"{parse_time(o[ramp_key].value or '', o[ramp_key].where, ramp_key) / 1e12 + 1}s"
    return out


EXIT_WHAT = {"group": "group", "stonewall": "stonewall", "all": "all"}


def groups(jf: JobFile) -> list[Group]:
    """Splits the jobs into the groups that run one after another (a new one at each
    `stonewall`), numbers fio's reporting groups (a new one at each `stonewall` or `new_group`),
    and maps each job, expanding `numjobs`."""
    out: list[Group] = []
    placed: dict[str, int] = {}  # job name -> its group
    report, in_report = 0, 0  # fio's groupid, and the jobs in it so far
    # fio's exitall is global: set in any job, it holds for every job.
    exitall = any("exitall" in j.options and _bool(j.options["exitall"]) for j in jf.jobs)
    for job in jf.jobs:
        o = job.options
        notes: list[str] = []
        settings, group = _job_settings(job, notes)
        n = _int(o["numjobs"], 1) if "numjobs" in o else 1
        if n > MAX_NUMJOBS:
            raise _err(o["numjobs"].where, f"numjobs={n}: at most {MAX_NUMJOBS} jobs (the core's limit; each is a host thread)")
        barrier = any(k in o and _bool(o[k]) for k in ("stonewall", "wait_for_previous"))
        if (barrier or ("new_group" in o and _bool(o["new_group"]))) and in_report:
            report, in_report = report + 1, 0
        in_report += n
        settings["group"] = report
        on_error = not exitall and "exitall_on_error" in o and _bool(o["exitall_on_error"])
        if exitall or on_error:
            what = (o["exit_what"].value or "").strip() if "exit_what" in o else "group"
            if what not in EXIT_WHAT:
                raise _err(o["exit_what"].where, f"exit_what={what}: must be group, stonewall or all")
            settings["exit_scope"] = EXIT_WHAT[what]
            if on_error:
                settings["exit_on_error"] = True
        if not out or (barrier and out[-1].jobs):
            out.append(Group(len(out), [], {}, global_options=jf.global_options))
        g = out[-1]
        g.notes.extend(notes)
        if "wait_for" in o:
            # fio: the job starts when every copy of the named job has finished. One of an
            # earlier group has (groups run one after another); one of this group ends first.
            other = (o["wait_for"].value or "").strip()
            if other not in placed:
                raise _err(o["wait_for"].where, f"wait_for={other}: no job of that name before this one")
            if placed[other] == g.groupid:
                settings["wait_for"] = other
        placed[job.name] = g.groupid
        for k, v in group.items():
            if k in g.workload and g.workload[k] != v:
                raise _err(job.where, f"{k} differs between jobs of one group; ssdlab applies it per group")
            g.workload[k] = v
        inc = _region(o["offset_increment"]) if "offset_increment" in o else 0
        delay = _startdelay(o["startdelay"]) if "startdelay" in o else None
        if delay and g.groupid > 0:
            g.notes.append(f"{o['startdelay'].where}: startdelay counts from the start of this group (fio counts it from the start of the run)")
        for i in range(n):
            entry = dict(settings)
            if n > 1:
                entry["name"] = f"{job.name}.{i}"
            if inc or isinstance(entry.get("offset"), Percent):
                # fio: job i of numjobs starts at offset + i x offset_increment.
                base = entry.get("offset", 0)
                if isinstance(base, (Percent, ZoneCount)) or isinstance(inc, (Percent, ZoneCount)):
                    # Resolved on the device (`resolve`): its capacity, its zone size.
                    entry["offset"] = Offset(base, inc, i)
                else:
                    entry["offset"] = base + i * inc
            if delay:
                lo, hi = delay
                # fio draws a range per job and clone (rand_between on its delay state), in microseconds.
                us = lo if lo == hi else random.Random(f"startdelay:{job.name}:{i}:{g.workload.get('randseed', 1)}").randint(lo, hi)
                entry["startdelay"] = f"{us}us"
            g.jobs.append(entry)
            g.sources.append(job)
    return out


def _startdelay(o: Option) -> tuple[int, int]:
    """fio's `startdelay=T` or `=LO-HI` (seconds unless a unit is given), in microseconds."""
    v = (o.value or "").strip()
    lo, sep, hi = v.partition("-")
    a = parse_time(lo, o.where, o.key) // 1_000_000
    b = parse_time(hi, o.where, o.key) // 1_000_000 if sep else a
    if b < a:
        raise _err(o.where, f"{o.key}={v}: the low end of the range is above the high end")
    return a, b


@dataclass(frozen=True)
class Offset:
    """Job `k`'s start when fio's offset or offset_increment is a share of the device or a
    number of zones."""

    base: int | Percent | ZoneCount
    inc: int | Percent | ZoneCount
    k: int


def resolve(entry: dict, capacity: int, zone: Optional[int] = None, handles: int = 0, interface: str = "nvme") -> dict:
    """A job entry with fio's shares of the device (`size=N%`, `offset=N%`,
    `offset_increment=N%`) turned into bytes of a device of `capacity` bytes, as fio's
    `get_start_offset` and `setup_files` do: a share of an offset is aligned up to the job's
    smallest block size, a share of a size is cut at the device's end and down to whole blocks.
    Counts of zones (`Nz`) and zbd's `zonesize` are checked against the device's `zone` size,
    and a job naming every placement identifier gets the device's `handles`."""
    out = dict(entry)
    if "needs_interface" in out:
        want, where = out.pop("needs_interface")
        if want != interface:
            raise _err(where, f"libblkio_driver=virtio-blk-vfio-pci drives a virtio-blk device: give the device nvme.interface = \"{want}\"")
    if "zbd_zonesize" in out:
        size_, where = out.pop("zbd_zonesize")
        if zone is not None and size_ != zone:
            raise _err(where, f"zonesize={size_}: the device's zones are {zone} B (ftl.zone_size)")
    for key in ("offset", "size"):
        v = out.get(key)
        if isinstance(v, ZoneCount):
            if zone is None:
                raise _err(v.where, f"{key}={v.n}z: counts zones, and the device has none (a zoned drive sets ftl.zone_size)")
            out[key] = v.n * zone
    if isinstance(out.get("offset"), Offset):
        o = out["offset"]
        for key, part in (("offset", o.base), ("offset_increment", o.inc)):
            if isinstance(part, ZoneCount) and zone is None:
                raise _err(part.where, f"{key}={part.n}z: counts zones, and the device has none (a zoned drive sets ftl.zone_size)")
        fix = lambda x: x.n * zone if isinstance(x, ZoneCount) and zone is not None else x  # noqa: E731
        out["offset"] = Offset(fix(o.base), fix(o.inc), o.k)
    if isinstance(out.get("placement_ids"), AllPids):
        out["placement_ids"] = list(range(handles))
    entry = out
    off, size = entry.get("offset", 0), entry.get("size")
    if not isinstance(off, (Percent, Offset)) and not isinstance(size, Percent):
        return entry
    min_bs = min(int(x) for x in str(out.get("bs", "4096")).split(","))
    if isinstance(off, (Percent, Offset)):
        base, inc, k = (off.base, off.inc, off.k) if isinstance(off, Offset) else (off, 0, 0)
        assert not isinstance(base, ZoneCount) and not isinstance(inc, ZoneCount)  # counts of zones are bytes by now (above)
        align = isinstance(base, Percent) or isinstance(inc, Percent)
        step = capacity * inc.pct // 100 if isinstance(inc, Percent) else inc
        start = (capacity * base.pct // 100 if isinstance(base, Percent) else base) + k * step
        if align:
            start = -(-start // min_bs) * min_bs
        if start >= capacity:
            where = base.where if isinstance(base, Percent) else inc.where if isinstance(inc, Percent) else "?"
            raise _err(where, f"job {entry.get('name')} starts at byte {start}, beyond the device's {capacity} B")
        out["offset"] = start
    if isinstance(size, Percent):
        n = min(capacity * size.pct // 100, capacity - out.get("offset", 0))
        n -= n % min_bs
        if n <= 0:
            raise _err(size.where, f"size={size.pct}%: leaves job {entry.get('name')} no whole block")
        out["size"] = n
    return out


def load(path: str | os.PathLike, env: Optional[Mapping[str, str]] = None, text: Optional[str] = None) -> tuple[list[Group], list[str]]:
    """Reads and maps a job file: its groups, and the options it ignored."""
    jf = read(path, env, text)
    return groups(jf), jf.ignored
