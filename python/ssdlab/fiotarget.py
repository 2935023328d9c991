"""A real file or block device as a probe target, driven through fio.

Every point of the battery is one fio run (``--output-format=json``) against the one path the
user gave, time-based for ``runtime`` after ``ramp`` of warm-up. The probe:

- writes only to that path: it creates a new file itself (``O_CREAT | O_EXCL | O_NOFOLLOW``),
  every fio run has ``allow_file_create=0``, colons in the path are escaped (fio reads ``:`` as
  a list of files), and before every run and before removing the file it checks that the path
  is still the file (or device) it checked first;
- fills the target by one sequential fio write (the seed's precondition), and refuses a block
  device or an existing non-empty file unless ``destroy_data`` is given (it then writes over
  the first ``size`` bytes), and a block device that is in use (mounted, swap, RAID) always;
- refuses symbolic links, directories and other special files;
- removes the file it created at the end, unless ``keep_file``;
- uses direct I/O with io_uring, else libaio, else psync, the first the path accepts, and
  buffered psync when the file system refuses O_DIRECT; the target's description says which.

Ctrl-C, SIGTERM and SIGHUP stop the running fio (SIGINT, then SIGKILL after 5 s or at a second
Ctrl-C) and raise KeyboardInterrupt, so that the probe keeps the experiments already finished.
A point the device refuses (512 B direct I/O on a 4 KiB-sector device) is recorded as not
measured, and its rule is inconclusive.

Leaves out: trims before writing (a real device's state is what it is), and repeats of a point.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import stat
import subprocess
from collections.abc import Sequence
from typing import Any, Callable, Optional

from ssdlab.exceptions import InputError
from ssdlab.probe import METRICS, UNIT, Job, MiB, Point, _bytes

INSTALL_HINT = "install fio (Debian/Ubuntu: `apt-get install fio`; Fedora: `dnf install fio`; macOS: `brew install fio`)"


def fio_binary() -> Optional[str]:
    """The fio on PATH, or None."""
    return shutil.which("fio")


def _duration_ms(text: str, what: str) -> int:
    """Milliseconds of a positive duration in fio's convention (a bare number is seconds)."""
    from ssdlab import _core

    try:
        ps = _core.parse_time(str(text).strip(), True, "s")
    except ValueError:
        ps = 0
    if ps <= 0:
        raise InputError(f"{what} = {text!r}: give a positive duration such as 500ms, 2s or 1m")
    return max(1, ps // 10**9)


def _filesystem(path: str) -> dict[str, str]:
    """Mount point, file-system type and source of the mount holding ``path`` (Linux's
    /proc/self/mountinfo; empty where it is not available)."""
    best: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, rest = left.split(), right.split()
                if len(fields) < 5 or len(rest) < 2:
                    continue
                mnt = fields[4].replace("\\040", " ")
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best.get("mount", "")):
                    best = {"mount": mnt, "fs": rest[0], "source": rest[1]}
    except OSError:
        pass
    return best


class FioTarget:
    kind = "fio"

    def __init__(
        self,
        path: str,
        size: str = "1GiB",
        runtime: str = "1s",
        ramp: str = "200ms",
        sustain: Optional[str] = None,
        destroy_data: bool = False,
        keep_file: bool = False,
    ) -> None:
        fio = fio_binary()
        if fio is None:
            raise InputError(f"fio:{path}: fio is not installed: {INSTALL_HINT}")
        self.fio = fio
        if not path:
            raise InputError("fio:PATH: give the file or block device to probe, e.g. fio:/tmp/ssdlab-probe.dat")
        self.path = os.path.abspath(path)
        self.name = f"fio:{self.path}"
        self.runtime_ms = _duration_ms(runtime, "runtime")
        self.ramp_ms = _duration_ms(ramp, "ramp") if str(ramp).strip() not in ("0", "0s", "0ms") else 0  # no warm-up
        self.sustain_ms = _duration_ms(sustain, "sustain") if sustain else None
        try:
            self.size = _bytes(size)
        except ValueError:
            raise InputError(f"size = {size!r}: give a size such as 256MiB or 4GiB") from None
        if self.size < 64 * MiB or self.size % UNIT:
            raise InputError(f"size = {size!r}: at least 64 MiB, a multiple of 4 KiB")
        self.keep_file = keep_file
        self.created = False
        self.identity: Optional[tuple[int, int]] = None
        self.refused: list[str] = []
        self._signals: dict[int, Any] = {}
        self.direct = True
        self.engine = "psync"
        self.version = subprocess.run([fio, "--version"], capture_output=True, text=True).stdout.strip()
        self._check_path(destroy_data)
        self.fs = _filesystem(self.path)
        self.prepared = False

    def _check_path(self, destroy_data: bool) -> None:
        p = self.path
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise InputError(f"fio:{p}: {e.strerror}") from None
        if st is None:
            parent = os.path.dirname(p) or "."
            if not os.path.isdir(parent):
                raise InputError(f"fio:{p}: the directory {parent} does not exist")
            try:
                free = shutil.disk_usage(parent).free
            except OSError as e:
                raise InputError(f"fio:{p}: {e.strerror}") from None
            if free < self.size + 64 * MiB:
                raise InputError(f"fio:{p}: {free} bytes free on its file system, too few for size = {self.size}")
            self.kind_of_path = "new file"
            return
        if stat.S_ISLNK(st.st_mode):
            raise InputError(f"fio:{p}: is a symbolic link; give the real path (the probe writes only to the path it is given)")
        if stat.S_ISBLK(st.st_mode):
            if not destroy_data:
                raise InputError(f"fio:{p}: is a block device; probing writes over its data: add --destroy-data to allow it")
            try:
                # O_EXCL on a block device fails while it is mounted or held (swap, RAID, LVM).
                fd = os.open(p, os.O_RDONLY | os.O_EXCL)
                try:
                    dev_size = os.lseek(fd, 0, os.SEEK_END)
                finally:
                    os.close(fd)
            except OSError as e:
                raise InputError(f"fio:{p}: cannot open the device exclusively ({e.strerror}): it is in use or not yours") from None
            if dev_size < self.size:
                raise InputError(f"fio:{p}: the device has {dev_size} bytes, fewer than size = {self.size}")
            self.kind_of_path = "block device"
        elif stat.S_ISREG(st.st_mode):
            if st.st_size > 0 and not destroy_data:
                raise InputError(f"fio:{p}: the file exists and is not empty ({st.st_size} bytes); probing writes over it: add --destroy-data to allow it")
            self.kind_of_path = "existing file"
        else:
            raise InputError(f"fio:{p}: is neither a regular file nor a block device")
        self.identity = (st.st_dev, st.st_ino)

    def _same_target(self) -> None:
        """The path is still what was checked (no file or link swapped in since)."""
        try:
            st = os.lstat(self.path)
        except OSError:
            st = None
        if st is None or stat.S_ISLNK(st.st_mode) or (st.st_dev, st.st_ino) != self.identity:
            raise InputError(f"fio:{self.path}: the path changed while the probe ran (it is no longer the file or device it checked): stopped")

    def describe(self) -> dict[str, Any]:
        fs = self.fs
        where = f"{fs.get('fs', '?')} at {fs.get('mount', '?')} ({fs.get('source', '?')})" if fs else "unknown file system"
        io = f"{'direct' if self.direct else 'buffered (the file system refuses O_DIRECT: the page cache, not the device, is measured)'} I/O, ioengine {self.engine}"
        return {
            "kind": "fio",
            "target": self.name,
            "description": f"{self.kind_of_path} {self.path}, {self.size / MiB:g} MiB on {where}",
            "path": self.path,
            "size_bytes": self.size,
            "filesystem": fs.get("fs"),
            "mount": fs.get("mount"),
            "source": fs.get("source"),
            "direct": self.direct,
            "ioengine": self.engine,
            "fio": self.version,
            "capacity_bytes": self.size,
            "refused": list(self.refused),
            "method": f"{self.version}, {io}, {self.runtime_ms} ms a point after {self.ramp_ms} ms of warm-up; precondition: one sequential write of the whole target",
        }

    # -----------------------------------------------------------------------------------------

    def _run(self, args: Sequence[str], timeout_s: float) -> dict[str, Any]:
        """Runs fio with ``args`` and returns its JSON; Ctrl-C stops fio and re-raises."""
        self._same_target()
        name = self.path.replace(":", "\\:")  # fio splits filename= at unescaped colons
        cmd = [self.fio, "--output-format=json", f"--filename={name}", "--allow_file_create=0", *args]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, errs = proc.communicate(timeout=timeout_s)
        except KeyboardInterrupt:
            self._stop(proc)
            raise
        except subprocess.TimeoutExpired:
            self._stop(proc)
            raise InputError(f"fio:{self.path}: fio ran past {timeout_s:.0f} s and was stopped") from None
        if proc.returncode != 0:
            raise _FioFailed(errs.strip() or out.strip())
        try:
            start = out.index("{")
            return json.loads(out[start:])
        except ValueError:
            raise _FioFailed(f"fio printed no JSON: {out.strip()[:200]}") from None

    @staticmethod
    def _stop(proc: subprocess.Popen[str]) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(5)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                proc.kill()
                proc.wait()

    def _hold_signals(self) -> None:
        """SIGTERM and SIGHUP stop the probe as Ctrl-C does (so fio never outlives it)."""

        def interrupt(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._signals[sig] = signal.signal(sig, interrupt)
            except ValueError:  # not the main thread: leave the handlers alone
                break

    def _release_signals(self) -> None:
        for sig, old in self._signals.items():
            signal.signal(sig, old)
        self._signals.clear()

    def _common(self) -> list[str]:
        return [f"--size={self.size}", f"--direct={1 if self.direct else 0}", f"--ioengine={self.engine}", "--thread", "--group_reporting", "--randrepeat=0", "--norandommap", "--lat_percentiles=1"]

    def prepare(self, points: Sequence[Point]) -> None:
        """The seed's precondition (one sequential write of the whole target, which creates a
        new file), then the fastest I/O engine the path accepts."""
        if self.prepared:
            return
        self._hold_signals()
        if self.kind_of_path == "new file":
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except OSError as e:
                raise InputError(f"fio:{self.path}: cannot create it ({e.strerror})") from None
            try:
                # At its full size from the start: fio lays out (unlinks and re-creates) a file
                # shorter than the job's size, which allow_file_create=0 then refuses.
                os.ftruncate(fd, self.size)
                st = os.fstat(fd)
            finally:
                os.close(fd)
            self.identity = (st.st_dev, st.st_ino)
            self.created = True
        elif self.kind_of_path == "existing file" and os.stat(self.path).st_size < self.size:
            with open(self.path, "r+b") as f:  # allowed by --destroy-data (or empty)
                f.truncate(self.size)
        base = [f"--size={self.size}", "--name=precondition", "--rw=write", "--bs=1M", "--end_fsync=1"]
        try:
            try:
                self._run([*base, "--direct=1", "--ioengine=psync"], timeout_s=3600)
            except _FioFailed:
                self.direct = False
                self._run([*base, "--direct=0", "--ioengine=psync"], timeout_s=3600)
        except _FioFailed as e:
            raise InputError(f"fio:{self.path}: the precondition write failed: {e}") from None
        for engine in ("io_uring", "libaio", "psync"):
            try:
                self._run([*self._common()[:2], f"--ioengine={engine}", "--thread", "--name=engine", "--rw=randread", "--bs=4k", "--iodepth=4", "--runtime=100ms", "--time_based"], timeout_s=60)
            except _FioFailed:
                continue
            self.engine = engine
            break
        self.prepared = True

    def finish(self) -> None:
        self._release_signals()
        if self.created and not self.keep_file:
            try:
                self._same_target()
                os.unlink(self.path)
            except (OSError, InputError):
                pass  # not ours any more: leave it
            self.created = False

    def job_args(self, job: Job, runtime_ms: Optional[int] = None) -> list[str]:
        """fio's options for one point (pinned pairs: a second section, the second half of the
        jobs, ``shift`` bytes after the first)."""
        rw = f"{job.rw}:{job.skip}" if job.skip else job.rw
        common = self._common()
        half = job.numjobs // 2 if job.shift else job.numjobs
        section = [f"--bs={job.bs}", f"--iodepth={job.iodepth}", f"--numjobs={half}", f"--rw={rw}"]
        if job.rw == "randrw":
            section.append(f"--rwmixread={job.rwmixread}")
        ms = runtime_ms or self.runtime_ms
        timing = [f"--runtime={ms}ms", "--time_based"] + ([f"--ramp_time={self.ramp_ms}ms"] if self.ramp_ms else [])
        if job.streams:
            regions = job.regions(self.size)
            first, region = regions[0]
            common[0] = f"--size={job.stream_span(region)}"
            args = [*common, "--name=probe", *section, f"--offset={first}", f"--offset_increment={region}", *timing]
            if job.shift:
                args += ["--name=probe-b", *section, f"--offset={regions[half][0]}", f"--offset_increment={region}", *timing]
            return args
        if job.size is not None:
            common[0] = f"--size={job.size}"
            section.append(f"--offset={job.offset}")
        elif job.offset:
            # Random offsets from `offset` in steps of the block size (fio's default blockalign).
            common[0] = f"--size={self.size - UNIT}"
            section.append(f"--offset={job.offset}")
        return [*common, "--name=probe", *section, *timing]

    def _measure(self, job: Job, runtime_ms: Optional[int] = None) -> dict[str, float]:
        ms = runtime_ms or self.runtime_ms
        try:
            data = self._run(self.job_args(job, runtime_ms), timeout_s=60 + 3 * (ms + self.ramp_ms) / 1000)
            return row_of_fio(data)
        except _FioFailed as e:
            if self.direct and (job.bs % UNIT or job.offset % UNIT) and "invalid argument" in str(e).lower():
                # A device of 4 KiB logical sectors refuses 512 B-granular direct I/O.
                self.refused.append(f"bs={job.bs} offset={job.offset}")
                return dict.fromkeys(METRICS, math.nan)
            raise InputError(f"fio:{self.path}: fio failed on rw={job.rw} bs={job.bs} iodepth={job.iodepth}: {e}") from None

    def measure(self, point: Point, progress: Optional[Callable[[float], None]]) -> dict[str, float]:
        return self._measure(point.job)

    def sustained(self, point: Point, profile: str, progress: Optional[Callable[[float], None]]) -> list[dict[str, Any]]:
        """Back-to-back stretches of random writes, ``runtime`` each, for ``sustain`` in all
        (30 s quick, 5 min full, unless given)."""
        total = self.sustain_ms or (300_000 if profile == "full" else 30_000)
        n = max(2, total // self.runtime_ms)
        out, written, span = [], 0.0, (self.runtime_ms + self.ramp_ms) / 1000
        for i in range(n):
            r = self._measure(point.job)
            # The warm-up writes too (at about the measured rate): count it.
            written += r["write_iops"] * point.job.bs * span
            out.append({"state": f"{(i + 1) * span:g} s", "drive_writes": written / self.size, "bw_mib_s": r["bw_mib_s"], "waf": math.nan})
            if progress:
                progress((i + 1) / n)
        return out


class _FioFailed(Exception):
    pass


def row_of_fio(data: dict[str, Any]) -> dict[str, float]:
    """The probe's figures from fio's JSON (one group-reported job)."""
    jobs = data.get("jobs") or []
    if not jobs:
        raise _FioFailed("fio's JSON has no jobs")
    j = jobs[0]
    if j.get("error"):
        raise _FioFailed(f"fio reported error {j['error']}")
    r, w = j["read"], j["write"]

    def total(o: dict[str, Any]) -> dict[str, Any]:
        # Total latency (submission to completion); fio before 3.x reports only clat.
        return o.get("lat_ns") or o.get("clat_ns") or {}

    def mean_us(o: dict[str, Any]) -> float:
        return float(total(o).get("mean", math.nan)) / 1e3 if o.get("total_ios", 0) else math.nan

    def p99_us(o: dict[str, Any]) -> float:
        pct = total(o).get("percentile") or (o.get("clat_ns") or {}).get("percentile") or {}
        return float(pct.get("99.000000", math.nan)) / 1e3 if o.get("total_ios", 0) else math.nan

    nr, nw = r.get("total_ios", 0), w.get("total_ios", 0)
    lat = ((mean_us(r) if nr else 0.0) * nr + (mean_us(w) if nw else 0.0) * nw) / max(nr + nw, 1)
    return {
        "iops": float(r["iops"]) + float(w["iops"]),
        "bw_mib_s": (float(r["bw_bytes"]) + float(w["bw_bytes"])) / MiB,
        "lat_us": lat,
        "read_iops": float(r["iops"]),
        "write_iops": float(w["iops"]),
        "read_lat_us": mean_us(r),
        "write_lat_us": mean_us(w),
        "read_p99_us": p99_us(r),
        "write_p99_us": p99_us(w),
    }


__all__ = ["FioTarget", "INSTALL_HINT", "fio_binary", "row_of_fio"]
