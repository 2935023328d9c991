"""``ssdlab serve``: the simulated drive over NBD, used by real clients from Debian's packages
(fio's nbd engine, qemu-io, nbdsh), which ``python3 dev.py setup`` installs as root. Each test
starts the server on a free loopback port, as a user would."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest

from conftest import ROOT

CLIENTS = ("nbdkit", "fio", "nbdsh", "qemu-io")
missing = [c for c in CLIENTS if shutil.which(c) is None]
plugin = subprocess.run(["nbdkit", "python", "--version"], capture_output=True).returncode == 0 if shutil.which("nbdkit") else False
pytestmark = pytest.mark.skipif(
    bool(missing) or not plugin,
    reason=f"needs {', '.join(missing) or 'nbdkit-plugin-python'} (python3 dev.py setup installs nbdkit, nbdkit-plugin-python, python3-libnbd (nbdsh), qemu-utils and fio as root)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``ssdlab serve`` in a child process, serving at ``uri``."""

    def __init__(self, *args: str) -> None:
        self.port = free_port()
        self.uri = f"nbd://127.0.0.1:{self.port}"
        env = dict(os.environ)
        env.pop("SSDLAB_DEBUG", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ssdlab", "serve", *args, "--port", str(self.port)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if "serving" not in line:
            self.proc.kill()
            _, rest = self.proc.communicate()
            raise AssertionError(line + rest)

    def stop(self, timeout: float = 60) -> tuple[int, str, str]:
        """Ctrl-C, then what the server printed: (exit code, stdout, stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err


@pytest.fixture
def serve() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
        s.proc.communicate()


def start(serve: list[Server], *args: str) -> Server:
    s = Server(*args)
    serve.append(s)
    return s


def fio(uri: str, *args: str) -> dict:
    # No verify state file: fio would leave one in the working directory (the repository).
    cmd = ["fio", "--name=job", "--ioengine=nbd", f"--uri={uri}", "--output-format=json", "--verify_state_save=0", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    return dict(json.loads(r.stdout[r.stdout.index("{") :]))


#: nbdsh runs the ``python3`` on PATH with libnbd's module, which Debian installs for its own
#: Python: put that first.
NBDSH_ENV = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))


def nbdsh(uri: str, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nbdsh", "-u", uri, "-c", code], capture_output=True, text=True, timeout=60, env=NBDSH_ENV)


def qemu_io(uri: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["qemu-io", "-f", "raw", "-c", command, uri], capture_output=True, text=True, timeout=60)


def test_fio_verifies_256_mib_and_other_clients_read_what_it_wrote(serve: list[Server]) -> None:
    s = start(serve, "default", "--integrity", "--store-memory", "64MiB")
    job = fio(s.uri, "--rw=write", "--bs=128k", "--size=256M", "--iodepth=16", "--verify=crc32c", "--do_verify=1")["jobs"][0]
    assert job["error"] == 0
    assert job["write"]["io_bytes"] == 256 << 20 and job["read"]["io_bytes"] == 256 << 20, "fio wrote 256 MiB and read it all back to verify"
    # A known pattern at 300 MiB, read back by qemu-io and nbdsh.
    fio(s.uri, "--rw=write", "--bs=64k", "--offset=300M", "--size=1M", "--buffer_pattern=0x5a")
    r = qemu_io(s.uri, "read -P 0x5a 300M 1M")
    assert r.returncode == 0 and "Pattern verification failed" not in r.stdout + r.stderr, r.stdout + r.stderr
    r = nbdsh(s.uri, "assert h.pread(1 << 20, 300 << 20) == b'\\x5a' * (1 << 20)")
    assert r.returncode == 0, r.stderr
    # A trim reads back zeroes; so does a write of zeroes; the bytes around stay.
    r = nbdsh(s.uri, "h.trim(65536, (300 << 20) + 65536); h.zero(4096, (300 << 20) + 262144)")
    assert r.returncode == 0, r.stderr
    r = qemu_io(s.uri, "read -P 0 314638336 64k")
    assert r.returncode == 0 and "Pattern verification failed" not in r.stdout + r.stderr, r.stdout + r.stderr
    check = "d = h.pread(1 << 20, 300 << 20)\nassert d[65536:131072] == bytes(65536) and d[262144:266240] == bytes(4096)\n"
    r = nbdsh(s.uri, check + "assert d[:65536] == b'\\x5a' * 65536 and d[131072:262144] == b'\\x5a' * 131072")
    assert r.returncode == 0, r.stderr
    code, out, err = s.stop()
    assert code == 0, err
    assert "Emulation" in out and "chunk reads checked, 0 corrupt" in out, out


def test_fio_latency_through_nbd_is_the_simulated_drives(serve: list[Server], cli) -> None:  # type: ignore[no-untyped-def]
    # A drive whose latency dominates the round trip: write-through TLC (no volatile write
    # cache), 16 KiB random writes at QD1, each one a program of its own (3.4 ms), served four
    # times slower than real time (13.6 ms of wall time each). The real path (fio, the socket,
    # nbdkit, the plugin) adds its own 0.4-1.6 ms on a 2-core VM, which the drive's latency
    # must dwarf for the comparison to be about the drive.
    scale = 4
    sets = ["-s", "ftl.write_cache=false", "-s", "ftl.mapping_unit=16KiB"]
    job = ["--rw=randwrite", "--bs=16k", "--iodepth=1", "--size=4G", "--number_ios=150"]
    s = start(serve, "tlc", *sets, "--once", "--json", "-s", "stats.interval=100ms", "--time-scale", str(scale))
    got = fio(s.uri, *job)["jobs"][0]["write"]
    code, out, err = s.stop()
    assert code == 0, err
    served = json.loads(out)
    ran = json.loads(cli("run", "tlc", *sets, "-w", "rw=randwrite", "-w", "bs=16k", "-w", "iodepth=1", "-w", "size=4G", "-w", "number_ios=150", "--json").stdout)
    # fio's wall-clock latency in the drive's simulated time.
    fio_us = got["clat_ns"]["mean"] / 1e3 / scale
    sim_us = served["write"]["latency_us"]["mean"]
    run_us = ran["write"]["latency_us"]["mean"]
    assert served["write"]["ios"] == 150
    # The time series of the serving (stats.interval) is in the summary, as a run's is.
    rows = [r for r in served["timeseries"]["rows"] if r["tenant"] == "all"]
    assert sum(r["ios"] for r in rows) == 150
    print(f"fio through NBD {fio_us:.1f} us, ssdlab run {run_us:.1f} us, served drive {sim_us:.1f} us")
    assert abs(fio_us - run_us) <= 0.2 * run_us, f"fio through NBD {fio_us:.1f} us, ssdlab run {run_us:.1f} us (served drive: {sim_us:.1f} us)"
    # What fio saw is the simulated latency plus the real path's overhead, never less.
    assert fio_us >= sim_us
    assert isinstance(served["emulation"]["kept_up"], bool) and "real time" in served["emulation"]["verdict"]


def test_an_aged_drive_at_qd32_keeps_up_or_says_so_and_time_scale_serves_it_correctly(serve: list[Server]) -> None:
    s = start(serve, "tlc-aged", "--once", "--json")
    fio(s.uri, "--rw=randwrite", "--bs=4k", "--size=4G", "--iodepth=32", "--runtime=3", "--time_based")
    code, out, err = s.stop()
    assert code == 0, err
    em = json.loads(out)["emulation"]
    assert isinstance(em["kept_up"], bool)
    if not em["kept_up"]:
        assert "--time-scale" in em["verdict"], em["verdict"]
    # Slowed down 4x, the drive still serves correct data, and its latencies are in simulated time.
    s = start(serve, "tlc-aged", "--once", "--json", "--time-scale", "4")
    job = fio(s.uri, "--rw=randwrite", "--bs=4k", "--size=64M", "--iodepth=32", "--verify=crc32c", "--do_verify=1", "--number_ios=4000")["jobs"][0]
    assert job["error"] == 0
    code, out, err = s.stop()
    served = json.loads(out)
    assert served["emulation"]["time_scale"] == 4.0
    assert served["write"]["ios"] == 4000
    # Simulated time runs 4x slower than wall time.
    assert served["emulation"]["simulated_s"] * 4 == pytest.approx(served["emulation"]["wall_s"], rel=0.2)


def test_flush_and_fua_wait_for_the_drives_write_cache(serve: list[Server]) -> None:
    # 4 KiB writes land in a 16 KiB page: a flush pads it and waits for its program (TLC: at
    # least 820.5 us); FUA is a write and a flush (nbdkit emulates it).
    s = start(serve, "tlc", "--once", "--json")
    r = nbdsh(s.uri, "h.pwrite(b'\\x11' * 4096, 1 << 20)\nh.flush()\nh.pwrite(b'\\x22' * 4096, 2 << 20, nbd.CMD_FLAG_FUA)\nassert h.pread(4096, 2 << 20) == b'\\x22' * 4096")
    assert r.returncode == 0, r.stderr
    code, out, err = s.stop()
    assert code == 0, err
    em = json.loads(out)["emulation"]
    assert em["requests"][1] == 2 and em["requests"][4] == 2, em["requests"]
    assert em["flush_padding_units"] > 0
    assert em["flush_mean_us"] >= 820.5, em["flush_mean_us"]
    # Without a volatile write cache a flush has nothing to wait for.
    s = start(serve, "tlc", "--once", "--json", "-s", "ftl.write_cache=false", "-s", "ftl.mapping_unit=16KiB")
    r = nbdsh(s.uri, "h.pwrite(b'\\x11' * 16384, 1 << 20)\nh.flush()")
    assert r.returncode == 0, r.stderr
    em = json.loads(s.stop()[1])["emulation"]
    assert em["requests"][4] == 1 and em["flush_padding_units"] == 0 and em["flush_mean_us"] < 100, em


def test_bad_requests_get_nbd_errors_and_the_server_keeps_serving(serve: list[Server]) -> None:
    s = start(serve, "default")
    size = int(nbdsh(s.uri, "print(h.get_size())").stdout)
    # libnbd checks requests itself unless strict mode is off: send them as a careless client would.
    cases = {
        "past the end": f"h.pread(4096, {size - 2048})",
        "misaligned": "h.pread(512, 100)",
        "not offered (cache)": "h.cache(4096, 0)",
        "unknown export": None,
    }
    for what, call in cases.items():
        if call is None:
            r = nbdsh(s.uri + "/nosuch", "h.pread(512, 0)")
        else:
            r = nbdsh(s.uri, f"h.set_strict_mode(0)\ntry:\n    {call}\nexcept nbd.Error as e:\n    print('ERR', e.errnum)\nelse:\n    print('OK')")
        assert r.returncode != 0 or "ERR" in r.stdout, f"{what}: {r.stdout} {r.stderr}"
    r = nbdsh(s.uri, "h.pwrite(b'\\x01' * 4096, 8192); assert h.pread(4096, 8192) == b'\\x01' * 4096")
    assert r.returncode == 0, r.stderr
    code, out, err = s.stop()
    assert code == 0
    assert "Emulation" in out


def test_each_tenant_is_an_export_of_its_own_namespace(serve: list[Server], tmp_path: Path) -> None:
    cfg = tmp_path / "two.toml"
    cfg.write_text('extends = "default"\n[[tenants]]\nname = "alpha"\n[[tenants]]\nname = "beta"\nshare = 0.25\n', encoding="utf-8")
    s = start(serve, str(cfg), "--once", "--json")
    sizes = nbdsh(s.uri + "/alpha", "print(h.get_size())"), nbdsh(s.uri + "/beta", "print(h.get_size())")
    alpha, beta = (int(r.stdout) for r in sizes)
    assert beta < alpha, (alpha, beta)
    r = nbdsh(s.uri + "/beta", "h.pwrite(b'\\x33' * 4096, 0)")
    assert r.returncode == 0, r.stderr
    # Offset 0 of alpha is elsewhere on the drive; the unnamed export is the first tenant's.
    r = nbdsh(s.uri, "assert h.pread(4096, 0) == bytes(4096)")
    assert r.returncode == 0, r.stderr
    r = nbdsh(s.uri + "/beta", "assert h.pread(4096, 0) == b'\\x33' * 4096")
    assert r.returncode == 0, r.stderr
    code, out, err = s.stop()
    tenants = {t["name"]: (t["read"]["ios"], t["write"]["ios"]) for t in json.loads(out)["tenants"]}
    assert tenants == {"alpha": (1, 0), "beta": (1, 1)}, tenants


def test_ctrl_c_stops_the_server_and_prints_the_summary(serve: list[Server]) -> None:
    s = start(serve, "default")
    fio(s.uri, "--rw=randread", "--bs=4k", "--size=64M", "--number_ios=200")
    t0 = time.monotonic()
    code, out, err = s.stop(timeout=30)
    took = time.monotonic() - t0
    assert code == 0, err
    assert "Throughput and latency" in out and "Emulation" in out and "real time: p99 lag" in out, out
    assert "Traceback" not in err
    print(f"stopped {took:.2f} s after Ctrl-C")


def test_serve_refuses_bad_options_with_exit_2(cli) -> None:  # type: ignore[no-untyped-def]
    for args, says in [
        (["serve", "default", "--time-scale", "0"], "--time-scale"),
        (["serve", "default", "--queues", "0"], "--queues"),
        (["serve", "default", "--store-memory", "lots"], "--store-memory"),
        (["serve", "default", "-s", "ftl.write_buffer=-1"], "ftl.write_buffer"),
    ]:
        r = cli(*args)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_without_nbdkit_serve_says_how_to_get_it(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bare = tmp_path / "bin"
    bare.mkdir()
    r = cli("serve", "default", env={"PATH": str(bare)})
    assert r.returncode == 2 and "apt-get install nbdkit" in r.stderr, r.stderr


def kernel_client() -> Optional[str]:
    """Why the kernel-client test cannot run here, or None."""
    if not Path("/dev/nbd0").exists():
        return "no /dev/nbd0: load the nbd kernel module (modprobe nbd) on a machine that allows it"
    for tool in ("nbd-client", "mkfs.ext4"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install nbd-client e2fsprogs)"
    if os.geteuid() != 0:
        return "nbd-client needs root"
    return None


@pytest.mark.skipif(kernel_client() is not None, reason=str(kernel_client()))
def test_the_kernel_client_makes_a_filesystem_on_the_drive(serve: list[Server]) -> None:
    s = start(serve, "default")
    subprocess.run(["nbd-client", "127.0.0.1", str(s.port), "/dev/nbd0", "-N", ""], check=True, timeout=60)
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", "/dev/nbd0"], check=True, timeout=300)
    finally:
        subprocess.run(["nbd-client", "-d", "/dev/nbd0"], timeout=60)
    code, out, _ = s.stop()
    assert code == 0 and "write" in out
