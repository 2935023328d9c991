"""The nbdkit plugin behind ``ssdlab serve``: nbdkit speaks NBD (handshake, options, exports,
request checks, threads); this plugin hands each request to the simulated drive
(``ssdlab._core.Emulator``) and waits for its simulated completion.

nbdkit loads this file with its own embedded Python; ``ssdlab serve`` starts it with the keys
below (``key=value`` after the plugin's path):

- ``toml``: the resolved config's TOML file; ``core``: the path of ``ssdlab._core``'s shared
  library, loaded on its own (it is built for the stable ABI, so nbdkit's Python can load it
  whatever the version of the venv that built it; the rest of the package, and what it
  imports, is never loaded here);
- ``time_scale``, ``store_memory`` (bytes), ``spill_dir``, ``checksums`` (0/1), ``block``
  (the drive's logical block), ``once`` (0/1: stop when the last client leaves);
- ``status``: a JSON file rewritten every ``status_every`` seconds with the figures so far;
  ``result``: the JSON file the summary goes to when the server stops; ``series`` (0/1): the
  status file also carries the time series' intervals as they close (``stats.interval``);

A request the drive refuses (out of range, misaligned, empty) fails with EINVAL, one after the
drive stopped with ESHUTDOWN, and any other failure with EIO; the server keeps serving.
FUA is emulated by nbdkit (a flush after the write).
"""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

import nbdkit  # type: ignore[import-not-found]  # provided by nbdkit's embedded interpreter

API_VERSION = 2

_params: dict[str, str] = {}
_state: dict[str, Any] = {}
_lock = threading.Lock()
_overhead = {"n": 0, "sum_us": 0.0}


def config(key: str, value: str) -> None:
    _params[key] = value


def config_complete() -> None:
    missing = [k for k in ("toml", "core", "time_scale", "store_memory", "spill_dir", "status", "result") if k not in _params]
    if missing:
        raise RuntimeError(f"ssdlab plugin: missing keys {missing}")


def thread_model() -> int:
    return int(nbdkit.THREAD_MODEL_PARALLEL)


def _precise_timers() -> None:
    """Linux wakes a sleeping thread up to its timer slack late (50 us by default): set this
    thread's to 1 ns, which the drive's engine thread inherits, so replies leave on time."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK
    except (OSError, AttributeError):
        pass


def _raise_priority() -> Optional[int]:
    """Lowers this thread's nice value to -10 if allowed (root, or CAP_SYS_NICE); returns the
    old one to restore, or None."""
    try:
        old = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, -10)
        return old
    except (OSError, AttributeError):
        return None


def _restore_priority(old: Optional[int]) -> None:
    if old is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, old)
        except OSError:
            pass


def _load_core() -> Any:
    """``ssdlab._core`` from its file, without the ``ssdlab`` package around it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ssdlab._core", _params["core"])
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {_params['core']}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def get_ready() -> None:
    _core = _load_core()
    _state["core"] = _core
    _precise_timers()
    # A thread whose reply is due waits for the GIL at most this long (default 5 ms).
    sys.setswitchinterval(1e-4)

    # (`open` below is nbdkit's callback, not the builtin.)
    text = Path(_params["toml"]).read_text(encoding="utf-8")
    cfg = _core.Config(None, None, [], text)
    # The engine thread inherits this thread's scheduling: a higher priority (where allowed)
    # lets it preempt the server's request threads when an event is due.
    nice = _raise_priority()
    try:
        emu = _core.Emulator(cfg, float(_params["time_scale"]), int(_params["store_memory"]), _params["spill_dir"], _params.get("checksums") == "1")
    finally:
        _restore_priority(nice)
    _state["emu"] = emu
    exports = emu.exports()
    _state["tenants"] = [name for name, _ in exports]
    _state["sizes"] = [size for _, size in exports]
    _state["scale"] = float(_params["time_scale"])
    _state["next_queue"] = 0
    _state["started"] = time.monotonic()


def after_fork() -> None:
    """nbdkit has set up its file descriptors (it reopens 0 as /dev/null and fails if another
    thread took that number meanwhile): files may be opened from other threads now."""
    every = float(_params.get("status_every", "1"))
    t = threading.Thread(target=_status_loop, args=(every,), name="ssdlab-status", daemon=True)
    t.start()


def _write_json(path: str, doc: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    Path(tmp).write_text(json.dumps(doc), encoding="utf-8")
    os.replace(tmp, path)


def _figures(series: bool = False) -> dict[str, Any]:
    """The emulation's figures; with ``series``, also the time series' last closed intervals
    (the whole drive's rows, at most 100)."""
    emu = _state["emu"]
    stats = json.loads(emu.stats())
    with _lock:
        n, total = _overhead["n"], _overhead["sum_us"]
    stats["server_overhead_us"] = total / n if n else 0.0
    if series:
        ts = json.loads(emu.summary()).get("timeseries") or {}
        # Closed intervals only: the summary ends with the one under way.
        step = float(ts.get("interval_s") or 0.0)
        rows = [r for r in ts.get("rows", []) if r.get("tenant") == "all" and r["end_s"] - r["start_s"] >= step * 0.999]
        stats["intervals"] = rows[-100:]
    return stats


def _status_loop(every: float) -> None:
    # The time series comes from the run's summary, whose making holds the drive's engine up
    # (a millisecond or so): every fifth status only.
    series = _params.get("series") == "1"
    n = 0
    while "emu" in _state:
        try:
            _write_json(_params["status"], _figures(series and n % 5 == 0))
        except OSError:
            pass
        n += 1
        time.sleep(every)


def cleanup() -> None:
    """All connections are closed and the server is stopping: the drive stops, and the result
    file gets the summary."""
    emu = _state.get("emu")
    if emu is None:
        return
    emu.stop()
    _write_json(_params["result"], {"summary": json.loads(emu.summary()), "emulation": _figures()})
    _state.pop("emu", None)


def list_exports(readonly: bool, is_tls: bool) -> list[str]:
    # One tenant ("default" without [[tenants]]): its export is also the unnamed one.
    return list(_state["tenants"])


def default_export(readonly: bool, is_tls: bool) -> str:
    return str(_state["tenants"][0])


def open(readonly: bool) -> dict[str, int]:  # noqa: A001 - nbdkit's callback name
    name = nbdkit.export_name()
    tenants = _state["tenants"]
    if name in ("", None):
        tenant = 0
    elif name in tenants:
        tenant = tenants.index(name)
    else:
        nbdkit.set_error(errno.ENOENT)
        raise RuntimeError(f"no export {name!r}: the drive's exports are {tenants}")
    with _lock:
        queue = _state["next_queue"]
        _state["next_queue"] += 1
        _state["open"] = _state.get("open", 0) + 1
    return {"tenant": tenant, "queue": queue}


def close(h: dict[str, int]) -> None:
    """With ``once=1``: when the last connection closes after requests were served and no
    client connects within a second (fio probes the size on a connection of its own first),
    the server stops."""
    with _lock:
        _state["open"] -= 1
        idle = _state["open"] == 0
        served = _overhead["n"] > 0
    if idle and served and _params.get("once") == "1":
        threading.Thread(target=_stop_if_still_idle, name="ssdlab-once", daemon=True).start()


def _stop_if_still_idle() -> None:
    time.sleep(1.0)
    with _lock:
        idle = _state.get("open", 0) == 0
    if idle:
        nbdkit.shutdown()


def get_size(h: dict[str, int]) -> int:
    return int(_state["sizes"][h["tenant"]])


def block_size(h: dict[str, int]) -> tuple[int, int, int]:
    return (int(_params.get("block", "512")), 4096, 32 << 20)


def can_write(h: dict[str, int]) -> bool:
    return True


def can_flush(h: dict[str, int]) -> bool:
    return True


def can_trim(h: dict[str, int]) -> bool:
    return True


def can_zero(h: dict[str, int]) -> bool:
    return True


def can_fua(h: dict[str, int]) -> int:
    return int(nbdkit.FUA_EMULATE)


def can_multi_conn(h: dict[str, int]) -> bool:
    # A flush waits for every write before it, whichever connection sent it.
    return True


def _serve(h: dict[str, int], call: Any, *args: Any) -> Any:
    """Runs one request; maps the drive's refusals to NBD errors; counts the server's overhead
    (wall time in the plugin beyond the request's simulated latency)."""
    t0 = time.perf_counter()
    try:
        out = call(h["tenant"], h["queue"], *args)
    except _state["core"].WorkloadError:
        nbdkit.set_error(errno.EINVAL)
        raise
    except KeyboardInterrupt:
        nbdkit.set_error(errno.ESHUTDOWN)
        raise RuntimeError("the emulated drive has stopped") from None
    except Exception:
        nbdkit.set_error(errno.EIO)
        raise
    wall_us = (time.perf_counter() - t0) * 1e6
    latency_us = out[-2]
    with _lock:
        _overhead["n"] += 1
        _overhead["sum_us"] += max(0.0, wall_us - latency_us * _state["scale"])
    return out


def pread(h: dict[str, int], buf: Any, offset: int, flags: int) -> None:
    data, _, _ = _serve(h, _state["emu"].read, offset, len(buf))
    buf[:] = data


def pwrite(h: dict[str, int], buf: Any, offset: int, flags: int) -> None:
    _serve(h, _state["emu"].write, offset, bytes(buf))


def trim(h: dict[str, int], count: int, offset: int, flags: int) -> None:
    _serve(h, _state["emu"].zero, offset, count, True)


def zero(h: dict[str, int], count: int, offset: int, flags: int) -> None:
    _serve(h, _state["emu"].zero, offset, count, False)


def flush(h: dict[str, int], flags: int) -> None:
    _serve(h, _state["emu"].flush)
