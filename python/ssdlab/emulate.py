"""Emulation: ``ssdlab serve`` exports a simulated drive over NBD, in real time, so real software
(fio's nbd engine, qemu, ``nbdcopy``/``nbdsh``, the kernel's ``nbd-client``) runs on it.

Why nbdkit: it is a well-kept NBD server (Debian's ``nbdkit``) that does the protocol's whole
surface (newstyle fixed handshake, export listing, block-size negotiation, request checks,
TCP and Unix sockets, TLS, one thread per request); ssdlab is its plugin
(:mod:`ssdlab.nbdkit_plugin`, loaded by ``nbdkit-plugin-python``), and the simulated drive,
its real-time engine and its data store are ssdlab's core (``ssdlab._core.Emulator``).

The real host replaces the simulated host stack: the config's host gets no software costs
and polled completion, so a request's simulated latency runs from its doorbell to its CQE.
Each NBD connection is one of the drive's queues (``--queues`` jobs, round robin); with
``[[tenants]]`` each tenant is an export of its own, on its jobs' queues.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from ssdlab import _core, api

NBDKIT_PACKAGES = "nbdkit nbdkit-plugin-python"

#: nbdkit's threads per connection: the most requests one connection has at the drive at once.
THREADS = 256

#: The simulated host of an emulated drive: the real host's stack replaces it.
HOST_SETTINGS: list[tuple[str, str]] = [
    ("host.engine", '"kernel"'),
    ("host.submit_cost", '"0ns"'),
    ("host.complete_cost", '"0ns"'),
    ("host.poll_complete_cost", '"0ns"'),
    ("host.batch_complete_cost", '"0ns"'),
    ("host.completion", '"poll"'),
    ("host.scheduler", '"none"'),
    ("host.copy", "false"),
    ("workload.direct", "true"),
    ("workload.ramp_time", '"0s"'),
]


class ServeError(Exception):
    """The server cannot start (no nbdkit, a port in use): a user error, exit code 2."""


@dataclass
class Serving:
    """Where the drive is served: ``uri`` for clients (``nbd://127.0.0.1:10809`` or
    ``nbd+unix:///?socket=PATH``), and the exports (the tenants' names; ``default`` without
    tenants; the first is also the unnamed export)."""

    uri: str
    exports: list[str]


def nbdkit_path() -> str:
    """The nbdkit binary with its Python plugin, or :class:`ServeError` saying how to get them."""
    exe = shutil.which("nbdkit")
    if exe is None:
        raise ServeError(f"ssdlab serve needs nbdkit and its Python plugin (Debian/Ubuntu: apt-get install {NBDKIT_PACKAGES})")
    probe = subprocess.run([exe, "python", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise ServeError(f"nbdkit has no Python plugin (Debian/Ubuntu: apt-get install nbdkit-plugin-python): {probe.stderr.strip()[:200]}")
    return exe


def emulation_settings(cfg: api.Config, queues: int) -> list[tuple[str, str]]:
    """The settings that make ``cfg`` an emulated drive: the host's, and ``queues`` jobs when
    the config has no tenants (a tenant keeps its own ``numjobs``)."""
    has_tenants = bool(cfg.table.get("tenants"))
    return HOST_SETTINGS + ([] if has_tenants else [("workload.numjobs", str(queues))])


def load(config: Optional[str], settings: list[tuple[str, str]], seed: Optional[int], queues: int, integrity: bool) -> api.Config:
    """The config to serve: ``config`` with ``settings``, then the emulation's own."""
    if not 1 <= queues <= 1024:
        raise ServeError(f"--queues {queues}: must be between 1 and 1024")
    base = api.load_config(config, seed=seed, settings=settings)
    extra = emulation_settings(base, queues) + ([("ftl.integrity", "true")] if integrity else [])
    return api.load_config(config, seed=seed, settings=settings + extra)


def serve(
    cfg: api.Config,
    *,
    port: Optional[int] = 10809,
    unix: Optional[str] = None,
    time_scale: float = 1.0,
    once: bool = False,
    store_memory: int = 1 << 30,
    spill_dir: Optional[str] = None,
    integrity: bool = False,
    status_every: float = 1.0,
    on_ready: Optional[Callable[[Serving], None]] = None,
    on_status: Optional[Callable[[dict[str, Any]], None]] = None,
) -> dict[str, Any]:
    """Serves ``cfg`` until Ctrl-C (or, with ``once``, until the last client disconnects);
    returns ``{"summary": ..., "emulation": ...}``: the run's summary (as ``ssdlab run``'s) and
    the emulation's figures (requests, lag percentiles, server overhead, data store)."""
    if not (1e-3 <= time_scale <= 1e6):
        raise ServeError(f"--time-scale {time_scale}: must be between 0.001 and 1e6")
    exe = nbdkit_path()
    with tempfile.TemporaryDirectory(prefix="ssdlab-serve-") as tmp:
        work = Path(tmp)
        toml = work / "config.toml"
        toml.write_text(cfg.toml, encoding="utf-8")
        status, result, pidfile = work / "status.json", work / "result.json", work / "nbdkit.pid"
        # Threads per connection: each holds one request while it waits for its simulated
        # completion, so they bound the queue depth a client reaches (nbdkit's default is 16).
        cmd = [exe, "--foreground", "--exit-with-parent", "-P", str(pidfile), "--threads", str(THREADS)]
        if unix is not None:
            cmd += ["--unix", unix]
            uri = f"nbd+unix:///?socket={unix}"
        else:
            cmd += ["--ipaddr", "127.0.0.1", "--port", str(port)]
            uri = f"nbd://127.0.0.1:{port}"
        table = cfg.table
        block = api._parse_bytes(table.get("nvme", {}).get("lba_size")) or 512
        cmd += [
            "python",
            str(Path(__file__).with_name("nbdkit_plugin.py")),
            f"toml={toml}",
            f"core={_core.__file__}",
            f"time_scale={time_scale!r}",
            f"store_memory={int(store_memory)}",
            f"spill_dir={spill_dir or tmp}",
            f"checksums={1 if integrity else 0}",
            f"status={status}",
            f"status_every={status_every!r}",
            f"result={result}",
            f"block={block}",
            f"once={1 if once else 0}",
            f"series={1 if _picoseconds(table.get('stats', {}).get('interval', 0)) else 0}",
        ]
        # nbdkit gets Ctrl-C from the terminal with us; it stops, unloads the plugin (which
        # writes the result) and exits.
        # nbdkit's messages (one per refused request, say) go to a file: a pipe nobody reads
        # while serving would fill and stall it.
        log = work / "nbdkit.log"
        with log.open("w", encoding="utf-8") as log_file, subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=log_file, text=True) as proc:
            try:
                _wait_ready(proc, pidfile, log)
                if on_ready is not None:
                    on_ready(Serving(uri, [str(t.get("name", f"tenant{i}")) for i, t in enumerate(table.get("tenants", []))] or ["default"]))
                while proc.poll() is None:
                    time.sleep(min(status_every, 0.2))
                    if on_status is not None and status.exists():
                        try:
                            on_status(json.loads(status.read_text(encoding="utf-8")))
                        except (OSError, ValueError):
                            pass
            except KeyboardInterrupt:
                _stop(proc)
            finally:
                if proc.poll() is None:
                    _stop(proc)
        errors = log.read_text(encoding="utf-8", errors="replace")
        if not result.exists():
            raise ServeError(f"nbdkit ended (exit {proc.returncode}) without a result: {errors.strip()[-2000:]}")
        return dict(json.loads(result.read_text(encoding="utf-8")))


def _picoseconds(v: Any) -> int:
    """A duration from the resolved TOML (``"10ms"``, or a number), in picoseconds; 0 if unset."""
    if isinstance(v, (int, float)):
        return int(v)
    return int(_core.parse_time(str(v))) if v else 0


def _wait_ready(proc: subprocess.Popen[str], pidfile: Path, log: Path) -> None:
    """Waits until nbdkit listens (it writes its pid file then); a start that fails raises
    :class:`ServeError` with nbdkit's message."""
    while not pidfile.exists():
        if proc.poll() is not None:
            msg = log.read_text(encoding="utf-8", errors="replace")
            raise ServeError(f"nbdkit could not start: {msg.strip()[-2000:]}")
        time.sleep(0.02)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Asks nbdkit to stop (SIGINT: it finishes what is in flight and unloads the plugin)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def keeps_up(emulation: dict[str, Any], mean_latency_us: float) -> tuple[bool, str]:
    """Whether the simulation kept up with real time: its p99 lag stayed under 10 % of the
    mean simulated latency, or under 10 us (what a timed wake-up costs anyway), so what the
    application saw is off by at most that much; with the reason in words."""
    p99_us = emulation["lag_ns"][2] / 1000.0
    limit = max(0.1 * mean_latency_us, 10.0)
    if p99_us <= limit:
        return True, f"kept up with real time: p99 lag {p99_us:.1f} us <= {limit:.1f} us (10% of the mean latency, at least 10 us)"
    return False, f"fell behind real time: p99 lag {p99_us:.1f} us > {limit:.1f} us (10% of the mean latency, at least 10 us); serve again with --time-scale K (simulated time K times slower)"

