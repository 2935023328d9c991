"""Parameter studies: a sweep spec expanded into points, run on a local process pool or a
dask.distributed cluster, each point's result kept in a resumable, crash-safe Parquet store.

A spec (TOML, or the same as a dict)::

    base = "p4800x"                  # preset or config file (relative to the spec)
    kind = "run"                     # "run": a simulation per point; "probe": a probe; "atc": an ATC study
    mode = "grid"                    # "grid": every combination of the axes; "zip": in step
    repeats = 1                      # runs per point; repeat k > 0 gets a seed derived from seed
    seed = 1                         # workload.randseed of repeat 0
    [set]                            # dotted keys every point shares
    "workload.number_ios" = 2000
    [axes]                           # dotted keys that vary (`base`: the device itself)
    "workload.iodepth" = [1, 4, 16, 64]
    "media.nvm.controllers" = { from = 1, to = 8 }                 # a range, step 1
    "media.nvm.read_latency" = { from = 100, to = 10000, points = 5, log = true, unit = "ns" }
    [probe]                          # kind = "probe": its profile and experiments
    experiments = ["crowded"]
    [atc]                            # kind = "atc": the stream and the cache (axes: "atc.<key>")
    vms = 16                         # a synthesised stream's keys (stack, ios, queues, vms, split,
    lines = [1, 8, 64]               #   reuse, bs, memory, buffer_pool, qd), or trace = "FILE";
                                     #   stu, policy, assoc, lines, pin_rings, pin_dedicated

An ``atc`` point replays one stream through one cache design (STU, policy, associativity,
pinning) at every size in ``lines``: its row has the hit rate at each size (``hit_rate@N``), the
smallest size reaching 50/80/90/95 % (``lines_90`` ...), and its curve goes to the series table.
The synthesised stream's seed is the point's seed.

**The store** (:mod:`ssdlab.store`) is a directory of Parquet files, one per finished point
(``points/<id>.parquet``, and ``series/<id>.parquet`` for its time series or curve), that
``pd.read_parquet("X.store/points")`` reads at every moment, also after ``kill -9``. A point's id
hashes everything that decides its result (the resolved base config, the point's settings, its
repeat and seed), so running a spec again runs only the points the store lacks, and a torn or
foreign file is set aside and its point run again.

**Workers** of the local executor never import the caller's ``__main__``: ``ssdlab.sweep`` works
from a script without ``if __name__ == "__main__":``, from ``python -c`` and from Jupyter.

Every point runs in a fresh simulation from its own config and seed, so the executors give the
same rows bit for bit; only ``wall_s`` (the point's wall-clock time) differs.

Leaves out: ATC points on a simulated device's own DMA stream (``ssdlab atc --from-sim``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import math
import os
import sys
import time
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from ssdlab.exceptions import InputError, utf8_text
from ssdlab.names import accepts, listing
from ssdlab.store import Store, describe

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

KINDS = ("run", "probe", "atc")

# An `atc` point's keys: the synthesised stream's (sizes may carry units), a trace, the cache.
ATC_SYNTH = {"stack", "ios", "queues", "vms", "split", "reuse", "bs", "memory", "buffer_pool", "pool_chunk", "qd"}
ATC_SIZES = {"bs", "memory", "buffer_pool", "pool_chunk"}
ATC_CACHE = {"stu", "policy", "assoc", "lines", "pin_rings", "pin_dedicated", "trace"}


@dataclass(frozen=True)
class Task:
    """One point: what a worker needs to run it (plain data, so it pickles to any worker)."""

    point_id: str
    kind: str
    base: str
    settings: tuple[tuple[str, Any], ...]
    params: tuple[tuple[str, Any], ...]
    repeat: int
    seed: int
    options: tuple[tuple[str, Any], ...] = ()  # the kind's table: [probe] or [atc]


def _toml(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        with open(path, "rb") as f:
            return tomllib.loads(utf8_text(f.read(), path))
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: {e}") from None


def _axis(name: str, spec: Any) -> list[Any]:
    """An axis's values: a list, or a range table ``{from, to, step | points, log, unit}``."""
    where = f"axes.{json.dumps(name)}"
    if isinstance(spec, list):
        if not spec:
            raise InputError(f"{where} = []: give at least one value")
        return list(spec)
    if not isinstance(spec, dict):
        raise InputError(f"{where} = {spec!r}: give a list of values or a range table {{ from, to, step | points, log, unit }}")
    unknown = sorted(set(spec) - {"from", "to", "step", "points", "log", "unit"})
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (a range has from, to, step or points, log, unit)")
    try:
        lo, hi = float(spec["from"]), float(spec["to"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{where}: a range needs numbers `from` and `to`") from None
    log, unit = bool(spec.get("log", False)), spec.get("unit")
    if "points" in spec:
        n = spec["points"]
        if not isinstance(n, int) or n < 1 or n > 100000:
            raise InputError(f"{where}.points = {n!r}: a whole number from 1 to 100000")
        if log and (lo <= 0 or hi <= 0):
            raise InputError(f"{where}: a log range needs positive `from` and `to`")
        if n == 1:
            values = [lo]
        elif log:
            values = [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]
        else:
            values = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    else:
        step = spec.get("step", 1)
        if log or not isinstance(step, (int, float)) or step <= 0:
            raise InputError(f"{where}: a stepped range needs a positive `step` (a log range needs `points`)")
        count = math.floor((hi - lo) / step + 1e-9) + 1
        if count < 1 or count > 100000:
            raise InputError(f"{where}: from {lo:g} to {hi:g} in steps of {step:g} gives {count} values (1 to 100000)")
        values = [lo + i * step for i in range(count)]
    ints = all(isinstance(spec.get(k), int) for k in ("from", "to")) and not log and isinstance(spec.get("step", 1), int) and "points" not in spec
    out: list[Any] = [int(round(v)) if ints else float(f"{v:.12g}") for v in values]
    if unit is not None:
        if not isinstance(unit, str) or not unit:
            raise InputError(f"{where}.unit = {unit!r}: a unit suffix such as \"ns\" or \"KiB\"")
        out = [f"{v:g}{unit}" for v in out]
    return out


@dataclass
class Spec:
    """A parsed sweep spec."""

    base: str
    kind: str
    settings: dict[str, Any]
    axes: dict[str, list[Any]]
    mode: str
    repeats: int
    seed: int
    probe: dict[str, Any]
    name: str = "sweep"
    atc: dict[str, Any] = None  # type: ignore[assignment]

    @classmethod
    def load(cls, spec: Any) -> Spec:
        """From a TOML file path or a dict; every problem of the spec is reported at once, each
        with its key path and value (an :class:`InputError`)."""
        where = ""
        if isinstance(spec, (str, os.PathLike)):
            path = os.fspath(spec)
            data = _toml(path)
            where = os.path.dirname(os.path.abspath(path))
            name = os.path.splitext(os.path.basename(path))[0]
            origin = path
        elif isinstance(spec, Mapping):
            data, name, origin = dict(spec), str(spec.get("name", "sweep")), "sweep spec"
        else:
            raise InputError(f"a sweep spec is a TOML file or a dict, not {type(spec).__name__}")
        problems: list[str] = []
        doc = _validated(data, problems)
        axes: dict[str, list[Any]] = {}
        for k, v in doc.axes.items():
            try:
                axes[k] = _axis(k, v)
            except InputError as e:
                problems.append(str(e.args[0]))
        for k, vals in axes.items():
            # A column holds one type: an axis mixing text and numbers (assoc = ["full", 4]) is text.
            kinds = {"num" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__ for v in vals}
            if len(kinds) > 1:
                axes[k] = [str(v) for v in vals]
        if "workload.randseed" in doc.set:
            problems.append("set.\"workload.randseed\": the spec's `seed` sets it (repeats derive theirs from it)")
        if doc.mode == "zip" and len({len(v) for v in axes.values()}) > 1:
            problems.append(f"mode = \"zip\": every axis needs as many values ({', '.join(f'{k}: {len(v)}' for k, v in axes.items())})")
        atc = dict(doc.atc)
        if doc.kind == "atc":
            for k in [*atc, *(a[4:] for a in axes if a.startswith("atc."))]:
                if k not in ATC_SYNTH | ATC_CACHE:
                    problems.append(f"atc.{k}: unknown key (known: {', '.join(sorted(ATC_SYNTH | ATC_CACHE))})")
            if isinstance(atc.get("trace"), str) and where and not os.path.isabs(atc["trace"]):
                atc["trace"] = os.path.join(where, atc["trace"])
        if problems:
            n = len(problems)
            raise InputError(f"{origin}: {n} problem{'s' if n > 1 else ''}:\n" + "\n".join(f"  - {p}" for p in problems))
        base = doc.base
        if where and (base.endswith(".toml") or os.sep in base) and not os.path.isabs(base):
            base = os.path.join(where, base)
        return cls(base, doc.kind, dict(doc.set), axes, doc.mode, doc.repeats, doc.seed, dict(doc.probe), str(doc.name or name), atc)

    def combinations(self) -> list[dict[str, Any]]:
        keys = list(self.axes)
        if not keys:
            return [{}]
        if self.mode == "zip":
            return [dict(zip(keys, vals)) for vals in zip(*(self.axes[k] for k in keys))]
        return [dict(zip(keys, vals)) for vals in itertools.product(*(self.axes[k] for k in keys))]


@functools.lru_cache(maxsize=1)
def _spec_model() -> Any:
    """The spec's keys and types as a pydantic model (built on first use: only sweeps need it)."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field

    class SpecModel(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        name: Optional[str] = None
        base: str = "default"
        kind: Literal["run", "probe", "atc"] = "run"
        mode: Literal["grid", "zip"] = "grid"
        repeats: int = Field(1, ge=1, le=10000)
        seed: int = Field(1, ge=0, lt=1 << 63)
        set: dict[str, Any] = Field(default_factory=dict)
        axes: dict[str, Any] = Field(default_factory=dict)
        probe: dict[str, Any] = Field(default_factory=dict)
        atc: dict[str, Any] = Field(default_factory=dict)

    return SpecModel


_RULES = {"extra_forbidden": "unknown key (known: base, kind, mode, repeats, seed, set, axes, probe, atc, name)"}


def _validated(data: dict[str, Any], problems: list[str]) -> Any:
    """``data`` as the spec model; each problem pydantic finds goes to ``problems`` as
    ``path = value: rule``, and its key takes its default so that the other checks go on."""
    from pydantic import ValidationError

    model = _spec_model()
    try:
        return model.model_validate(data)
    except ValidationError as e:
        bad = set()
        for err in e.errors():
            loc = ".".join(json.dumps(p) if isinstance(p, str) and not p.isidentifier() else str(p) for p in err["loc"])
            shown = repr(err.get("input"))
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            problems.append(f"{loc} = {shown}: {_RULES.get(err['type'], err['msg'])}")
            bad.add(err["loc"][0])
        return model.model_validate({k: v for k, v in data.items() if k not in bad})


def derived_seed(seed: int, repeat: int) -> int:
    """Repeat 0 runs at the spec's seed (a point equals a plain run); repeat k > 0 at a seed
    hashed from both, the same for every point (common random numbers across the points)."""
    if repeat == 0:
        return seed
    h = hashlib.sha256(f"ssdlab-sweep:{seed}:{repeat}".encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 62) - 1) or 1


def tasks(spec: Spec) -> list[Task]:
    """Every point of the spec, with its id. Checks each point's config once, so that a bad
    value is reported before anything runs."""
    from ssdlab import api

    out = []
    hashes: dict[str, str] = {}
    if spec.kind == "atc":
        for combo in spec.combinations():
            opts = {**spec.atc, **{k[4:]: v for k, v in combo.items() if k.startswith("atc.")}}
            _atc_args(opts, 1, check=True, where=json.dumps(combo, default=str))
            for r in range(spec.repeats):
                seed = derived_seed(spec.seed, r)
                key = json.dumps(["atc", sorted(opts.items()), r, seed], sort_keys=True, default=str)
                pid = hashlib.sha256(key.encode()).hexdigest()[:20]
                out.append(Task(pid, "atc", spec.base, (), tuple(combo.items()), r, seed, tuple(sorted(opts.items()))))
        return out
    problems: list[str] = []
    for combo in spec.combinations():
        # An axis named `base` varies the device itself.
        base = str(combo.get("base", spec.base))
        params = {k: v for k, v in combo.items() if k != "base"}
        try:
            if base not in hashes:
                hashes[base] = api.load_config(base, set=spec.settings).hash
            api.load_config(base, set={**spec.settings, **params})
        except Exception as e:  # noqa: BLE001 - reported with the point
            problems.append(f"sweep point {json.dumps(combo, default=str)}: {_problem(e)}")
            if len(problems) >= 20:
                break
            continue
        for r in range(spec.repeats):
            seed = derived_seed(spec.seed, r)
            key = json.dumps([spec.kind, hashes[base], sorted(params.items()), sorted(spec.probe.items()), r, seed], sort_keys=True, default=str)
            pid = hashlib.sha256(key.encode()).hexdigest()[:20]
            out.append(Task(pid, spec.kind, base, tuple(sorted(spec.settings.items())), tuple(combo.items()), r, seed, tuple(sorted(spec.probe.items()))))
    if len(problems) == 1:
        raise InputError(problems[0])
    if problems:
        more = " (the first 20)" if len(problems) >= 20 else ""
        raise InputError(f"{len(problems)} points of the sweep do not load{more}:\n" + "\n".join(f"  - {p}" for p in problems))
    return out


def _atc_args(opts: Mapping[str, Any], seed: int, check: bool = False, where: str = "") -> dict[str, Any]:
    """The keyword arguments of :func:`ssdlab.ats.study` for an ``atc`` point's options; with
    ``check``, also that the cache's values parse (before anything runs)."""
    from ssdlab import ats

    try:
        synth = {k: (ats.parse_size(v, f"atc.{k}") if k in ATC_SIZES else v) for k, v in opts.items() if k in ATC_SYNTH}
        lines = opts.get("lines", "1-4096")
        lines = ats.parse_lines(lines if isinstance(lines, (str, list)) else [lines])
        stu = ats.parse_stu(opts.get("stu", "2m"))
        assoc = opts.get("assoc", "full")
        if check and str(assoc).lower() not in ("full", "fa", "0") and not str(assoc).isdigit():
            raise InputError(f"atc.assoc = {assoc!r}: full, or a number of ways")
        policy = str(opts.get("policy", "lru"))
        if check and not accepts("atc_policy", policy):
            raise InputError(f"atc.policy = {policy!r}: {listing('atc_policy')}")
    except Exception as e:  # noqa: BLE001 - reported with the point
        raise InputError(f"sweep point {where}: {_problem(e)}") from None
    args: dict[str, Any] = {"stu": [stu], "policies": [policy], "assoc": [assoc], "lines": lines, "seed": seed,
                            "pin_rings": bool(opts.get("pin_rings", False)), "pin_dedicated": bool(opts.get("pin_dedicated", False))}
    if "trace" in opts:
        args["trace"] = str(opts["trace"])
    else:
        args["synth"] = {**synth, "seed": seed}
    return args


def _problem(e: BaseException) -> str:
    from ssdlab.exceptions import issues

    found = issues(e)
    if found:
        return "; ".join(f"{i['path']} = {i['value']}: {i['rule']}" for i in found)
    return str(e.args[0] if e.args else e)


def execute(task: Task) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, tuple[str, str]]]:
    """Runs one point (in a worker): its row, its time-series rows, and the unit and
    description of the columns the metric registry describes."""
    from ssdlab import __version__, api

    start = time.perf_counter()
    # An axis over workload.randseed itself wins over the repeat's seed.
    settings = {**dict(task.settings), "workload.randseed": task.seed, **{k: v for k, v in task.params if k != "base"}}
    row: dict[str, Any] = {"point_id": task.point_id, "kind": task.kind, "repeat": task.repeat, "seed": task.seed}
    for k, v in task.params:
        row[k] = v
    series: list[dict[str, Any]] = []
    meta: dict[str, tuple[str, str]] = {k: describe(k, dict(task.params)) for k, _ in task.params}
    if task.kind == "run":
        # The no-op progress callback lets a worker's Ctrl-C stop its simulation at once.
        result = api.run(task.base, set=settings, progress=lambda _: None)
        s = result.summary
        row["config_hash"] = s["config_hash"]
        for k in ("ios", "sim_time_s", "window_s", "iops", "bandwidth_mib_s", "events"):
            row[k] = s.get(k)
        for op in api.OPS:
            o = s[op]
            row[f"{op}.ios"], row[f"{op}.iops"], row[f"{op}.bandwidth_mib_s"] = o["ios"], o["iops"], o["bandwidth_mib_s"]
            for q in ("mean", "p50", "p99", "p999", "max"):
                row[f"{op}.latency_us.{q}"] = o["latency_us"][q]
        flat = api._flat({"breakdown_us": s["breakdown_us"], "utilisation": s["utilisation"]})
        row.update({k: v for k, v in flat.items() if isinstance(v, (int, float, str, bool)) or v is None})
        for k, v in s["metrics"].items():
            row[f"metrics.{k}"] = v
        for name, unit, kind, text in result.metric_info:
            meta[f"metrics.{name}"] = (unit, f"{text} ({kind})")
        for t in s["tenants"] if len(s.get("tenants") or []) > 1 else []:
            for k in ("iops", "bandwidth_mib_s", "weight", "weight_ratio", "proportionality"):
                row[f"tenant.{t['name']}.{k}"] = t.get(k)
            for k in ("waf", "own_fraction"):
                row[f"tenant.{t['name']}.flash.{k}"] = (t.get("flash") or {}).get(k)
        for j in s["jobs"] if len(s.get("jobs") or []) > 1 else []:
            for k in ("iops", "bandwidth_mib_s"):
                row[f"job.{j['name']}.{k}"] = j.get(k)
        row["flash.waf"] = (s.get("flash") or {}).get("waf")
        if s.get("timeseries"):
            series = [{"point_id": task.point_id, **r} for r in s["timeseries"]["rows"]]
    elif task.kind == "atc":
        from ssdlab import ats

        args = _atc_args(dict(task.options), task.seed)
        curve = sorted(ats.study(args.pop("trace", None), **args).points, key=lambda p: (p["pinned"], p["lines"]))
        # With pinning the study also gives the unpinned curve: the point is the pinned one.
        pinned = bool(args["pin_rings"])
        curve = [p for p in curve if p["pinned"] == pinned] or curve
        row["accesses"] = curve[0]["accesses"]
        for p in curve:
            row[f"hit_rate@{p['lines']}"] = p["hit_rate"]
        row["hit_rate"] = curve[-1]["hit_rate"]
        for target in (50, 80, 90, 95):
            row[f"lines_{target}"] = next((p["lines"] for p in curve if p["hit_rate"] >= target / 100), None)
        series = [{"point_id": task.point_id, "lines": p["lines"], "hit_rate": p["hit_rate"], "hits": p["hits"]} for p in curve]
    else:
        from ssdlab import probe as pr

        opts = dict(task.options)
        probe = pr.run_probe(pr.SimTarget(api.load_config(task.base, set=settings)), opts.get("profile", "quick"), opts.get("experiments"))
        row["config_hash"] = probe.target.get("config_hash")
        for r in probe.rules:
            row[f"rule.{r['rule']}.verdict"] = r["verdict"]
            row[f"rule.{r['rule']}.value"] = r["value"]
        inter = probe.interleave or {}
        units = inter.get("units") or {}
        row["interleave.degree"] = inter.get("degree")
        row["interleave.chunk_bytes"] = units.get("chunk_bytes")
        row["interleave.confidence"] = units.get("confidence")
        row["interleave.stripe"] = inter.get("stripe")
        row["interleave.period"] = inter.get("period")
        row["interleave.period_confidence"] = inter.get("confidence")
    row["version"] = __version__
    row["wall_s"] = time.perf_counter() - start
    return row, series, meta


def open_store(path: str, table: str = "points") -> pd.DataFrame:
    """A sweep store's rows: one per point (``table="points"``), or the time series. The tables
    hold the points of the spec that last ran into the store (the others are set aside)."""
    from ssdlab.api import _arg_error, _path_arg

    if table not in ("points", "series"):
        raise _arg_error("table", table, "must be \"points\" or \"series\"")
    return Store(_path_arg(path, "path")).read(table)


def spec_doc(spec: Spec, todo: Sequence[Task]) -> dict[str, Any]:
    """What ``sweep.json`` holds: the spec and its points' ids, in the spec's order."""
    return {"name": spec.name, "base": spec.base, "kind": spec.kind, "mode": spec.mode, "axes": spec.axes, "set": spec.settings,
            "repeats": spec.repeats, "seed": spec.seed, "probe": spec.probe, "atc": spec.atc, "points": list(dict.fromkeys(t.point_id for t in todo))}


# ---------------------------------------------------------------------------------------------
# Executors.


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True  # no /proc: kill(0) is all there is


def _end_with_sweep(sweep: int) -> None:
    """A local worker's initializer: the worker ends (within 0.2 s) once the sweep that started
    it is gone, even mid-point, so that a sweep killed with SIGKILL leaves no worker behind (the
    workers are children of the fork server, not of the sweep)."""
    import threading
    import time

    def watch() -> None:
        while _alive(sweep):
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="ssdlab-watch-sweep", daemon=True).start()


@contextlib.contextmanager
def _blank_main() -> Iterator[None]:
    """While workers start, ``__main__`` is a blank module. multiprocessing primes a spawned or
    fork-server worker by running the parent's main script (or module) again, which re-runs a
    script's top-level ``ssdlab.sweep(...)`` without a ``__name__`` guard; the workers need only
    ``ssdlab.lab.execute``, which they import by name."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _local(n: int) -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # forkserver: workers fork from a clean server process, not from this one (whose threads a
    # plain fork would copy mid-flight).
    return ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("forkserver"), initializer=_end_with_sweep, initargs=(os.getpid(),))


def _dask(executor: str, n: int) -> tuple[Any, Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError(f"--executor {executor}: dask.distributed is not installed (pip install 'dask[distributed]')") from None
    if executor == "dask-local":
        with _blank_main():  # the nannies start their workers before LocalCluster returns
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)
            return Client(cluster), cluster
    address = executor.removeprefix("dask://")
    if not address or ":" not in address:
        raise InputError(f"--executor {executor}: give dask://HOST:PORT of a running scheduler")
    try:
        return Client(f"tcp://{address}", timeout="10s"), None
    except OSError as e:
        raise InputError(f"--executor {executor}: cannot reach the scheduler ({e})") from None


def run_tasks(todo: Sequence[Task], store: Store, executor: str = "local", workers: Optional[int] = None, progress: Optional[Callable[[float], None]] = None) -> int:
    """Runs ``todo`` on the executor and stores each point as it finishes; returns how many
    ran. Ctrl-C cancels what has not started and keeps what finished."""
    n = workers or os.cpu_count() or 1
    total = len(todo)
    finished = 0

    def tick() -> None:
        if progress:
            progress(finished / max(total, 1))

    if not todo:
        return 0
    if executor == "serial":
        for t in todo:
            store.write(*execute(t))
            finished += 1
            tick()
        return finished
    if executor == "local":
        from concurrent.futures import as_completed

        with _blank_main():  # the workers start as the tasks are submitted
            pool = _local(n)
        try:
            with _blank_main():
                futures = [pool.submit(execute, t) for t in todo]
            for f in as_completed(futures):
                store.write(*f.result())
                finished += 1
                tick()
        except BaseException:
            # Nothing outlives the sweep: cancel what has not started, end what has.
            procs = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.join(5)
            raise
        pool.shutdown()
        return finished
    if executor == "dask-local" or executor.startswith("dask://"):
        from distributed import as_completed as dask_completed

        client, cluster = _dask(executor, n)
        try:
            futures = client.map(execute, list(todo), pure=False)
            for f in dask_completed(futures):
                store.write(*f.result())
                finished += 1
                tick()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return finished
    raise InputError(f"--executor {executor!r}: local, serial, dask-local or dask://HOST:PORT")


def sweep(
    spec: Any,
    store: Optional[str] = None,
    executor: str = "local",
    workers: Optional[int] = None,
    progress: Optional[Callable[[float], None]] = None,
) -> pd.DataFrame:
    """Runs a sweep spec (a TOML path or a dict) into ``store`` (default: ``<spec>.store``
    beside a spec file, else ``sweep.store``), skipping the points already there, and returns
    the store's rows for this spec's points."""
    from ssdlab.api import _callable_arg, _int_arg, _path_arg

    if not isinstance(executor, str) or executor not in ("local", "serial", "dask-local") and not executor.startswith("dask://"):
        raise InputError(f"--executor {executor!r}: local, serial, dask-local or dask://HOST:PORT")
    _int_arg(workers, "workers", 1, 4096, optional=True)
    _callable_arg(progress, "progress")
    if store is not None:
        store = _path_arg(store, "store")
    if isinstance(spec, (str, os.PathLike)):
        spec = _path_arg(spec, "spec")
    s = Spec.load(spec)
    todo_all = tasks(s)
    if store is None:
        store = (os.path.splitext(os.fspath(spec))[0] if isinstance(spec, (str, os.PathLike)) else s.name) + ".store"
    st = Store(store)
    st.create(spec_doc(s, todo_all))
    try:
        st.clean(keep={t.point_id for t in todo_all})
        have = st.done(cleaned=True)
        todo = [t for t in todo_all if t.point_id not in have]
        run_tasks(todo, st, executor, workers, progress)
        df = st.read()
    finally:
        st.close()
    order = list(dict.fromkeys(t.point_id for t in todo_all))
    return df.set_index("point_id").loc[order].reset_index()


def plan(spec: Any, store: Optional[str] = None) -> tuple[Spec, list[Task], set[str]]:
    """The spec, its points and those a store already holds (for dry runs and progress)."""
    s = Spec.load(spec)
    t = tasks(s)
    have = Store(store).done() if store else set()
    return s, t, have


def command(out: Console, spec: str, store: Optional[str], executor: str, workers: Optional[int], dry_run: bool, as_json: bool) -> None:
    """``ssdlab sweep``: runs the points ``store`` lacks (or, ``dry_run``, counts them) and
    prints what it did and the rows (or the rows as JSON)."""
    from ssdlab.cliutil import Bar, UsageError

    if not os.path.isfile(spec):
        raise UsageError(f"{spec}: no such file")
    store = store or os.path.splitext(spec)[0] + ".store"
    s, todo, have = plan(spec, store)
    left = [t for t in todo if t.point_id not in have]
    if dry_run:
        out.print(f"{len(todo)} points ({len(s.combinations())} combinations x {s.repeats} repeats); {len(todo) - len(left)} in {store}, {len(left)} to run", highlight=False)
        return
    start = time.monotonic()
    with Bar(f"sweep {s.name}") as bar:
        df = sweep(spec, store, executor, workers, progress=bar)
    took = time.monotonic() - start
    if as_json:
        out.file.write(df.to_json(orient="records", indent=1) + "\n")
        return
    out.print(f"{len(todo)} points: {len(left)} run, {len(todo) - len(left)} already in {store}; {took:.1f} s ({len(left) / took if took > 0 else 0:.1f} points/s)", highlight=False)
    print_rows(out, s, df)


def print_rows(out: Console, spec: Spec, df: pd.DataFrame) -> None:
    """The table ``ssdlab sweep`` prints: the axes and headline metrics of the first 40 rows."""
    from rich.table import Table

    shown = [c for c in (*spec.axes, "repeat", "iops", "bandwidth_mib_s", "read.latency_us.mean", "write.latency_us.mean") if c in df.columns]
    shown += [c for c in df.columns if c.startswith("rule.") and c.endswith(".verdict")]
    t = Table(title=f"{spec.name}: {len(df)} rows (every metric is in the store: ssdlab.open_store)", title_justify="left")
    for c in shown:
        t.add_column(c, justify="right")
    for _, row in df.head(40).iterrows():
        t.add_row(*(f"{row[c]:,.2f}" if isinstance(row[c], float) else str(row[c]) for c in shown))
    out.print(t)
    if len(df) > 40:
        out.print(f"  ... {len(df) - 40} more rows", highlight=False)


__all__ = ["Spec", "Store", "Task", "execute", "open_store", "plan", "print_rows", "run_tasks", "spec_doc", "sweep"]
