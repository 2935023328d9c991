"""The Python API: build configs, run simulations, get results as dicts and DataFrames."""

from __future__ import annotations

import json
import operator
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from ssdlab import _core
from ssdlab.exceptions import ConfigError, ConfigWarning, InputError, WorkloadError, issues
from ssdlab.names import names

#: The I/O directions, in the order of their codes in I/O logs (the core's).
OPS = names("direction")

if TYPE_CHECKING:  # pandas and numpy load on first use: the CLI's memory and start-up stay small
    import pandas as pd

ConfigLike = Union[None, str, "os.PathLike[str]", Mapping[str, Any], "Config"]


def _nest(dotted: Mapping[str, Any]) -> dict[str, Any]:
    """``{"pcie.lanes": 8}`` -> ``{"pcie": {"lanes": 8}}``."""
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        parts = str(key).split(".")
        cur = out
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = value
    return out


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    for k, v in top.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = dict(v) if isinstance(v, Mapping) else v
    return base


class Config:
    """A validated, fully resolved configuration (every preset and override applied)."""

    def __init__(self, native: _core.Config) -> None:
        self._native = native

    @property
    def toml(self) -> str:
        """The resolved config as TOML text (what ``ssdlab config show`` prints)."""
        return self._native.to_toml()

    @property
    def hash(self) -> str:
        """A short stable hash of the resolved config."""
        return self._native.hash()

    @property
    def description(self) -> str:
        return self._native.description

    @property
    def seed(self) -> int:
        return self._native.seed

    @property
    def capacity(self) -> int:
        """Bytes the device exports to the host."""
        return self._native.capacity

    @property
    def advisories(self) -> list[dict[str, str]]:
        """Advice on the config (``path``, ``value``, ``rule``): settings that do nothing the
        user likely meant. :func:`run` issues each as a :class:`ConfigWarning`."""
        return [{"path": p, "value": v, "rule": r} for p, v, r in self._native.advisories()]

    def memory(self, keep_ios: bool = False) -> dict[str, int]:
        """The host memory a run of this config may take at its peak, in bytes by part (with
        ``keep_ios``: an I/O log), with ``total`` and ``limit`` (the default limit :func:`run`
        refuses above: the least of half the machine's memory, ``ulimit -v`` and the cgroup's
        ``memory.max``, less what the process holds)."""
        parts, limit = self._native.memory_estimate(_bool_arg(keep_ios, "keep_ios"))
        out = dict(parts)
        out["total"] = min(sum(out.values()), (1 << 64) - 1)
        out["limit"] = limit
        return out

    @property
    def table(self) -> dict[str, Any]:
        """The resolved config as nested dicts: the tables, keys and values of its TOML (a new
        copy at each call)."""
        # The core hands the same tree over as JSON, which Python parses in native code.
        table: dict[str, Any] = json.loads(self._native.to_json())
        return table

    def __repr__(self) -> str:
        return f"<ssdlab.Config {self.hash} {self.description!r}>"


def load_config(
    config: ConfigLike = None,
    *,
    workload: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    set: Optional[Mapping[str, Any]] = None,  # noqa: A002 - mirrors the CLI's --set
    settings: Optional[list[tuple[str, str]]] = None,
) -> Config:
    """Builds a :class:`Config`.

    ``config`` is a preset name, a TOML file path, a dict (which may say ``extends``), a
    :class:`Config`, or ``None`` for the ``default`` preset. ``workload`` overrides workload
    keys in fio's vocabulary (``{"rw": "randwrite", "bs": "4k", "iodepth": 32}``), ``set``
    overrides any dotted key (``{"pcie.lanes": 8}``), ``seed`` sets ``workload.randseed``, and
    ``settings`` are ``(dotted key, text)`` pairs as the CLI passes them.
    """
    base: Optional[str] = None
    base_toml: Optional[str] = None
    overrides: dict[str, Any] = {}
    for name, tree in (("config", config), ("workload", workload), ("set", set)):
        _check_tree(tree, name)
    if config is not None and not isinstance(config, (str, os.PathLike, Mapping, Config)):
        raise _arg_error("config", config, "must be a preset name, a TOML file path, a dict or a Config")
    if workload is not None and not isinstance(workload, Mapping):
        raise _arg_error("workload", workload, "must be a table of fio keys, such as {'rw': 'randread'}")
    if set is not None and not isinstance(set, Mapping):
        raise _arg_error("set", set, "must map dotted keys to values, such as {'pcie.lanes': 8}")
    if isinstance(config, Config):
        base_toml = config.toml
    elif isinstance(config, Mapping):
        overrides = _merge({}, config)
    elif config is not None:
        base = os.fspath(config)
    if workload:
        _merge(overrides, {"workload": dict(workload)})
    if set:
        _merge(overrides, _nest(set))
    if seed is not None:
        _merge(overrides, {"workload": {"randseed": _seed(seed)}})
    if base is not None:
        _check_text(base, "config")
    return Config(_core.Config(base, overrides or None, _settings(settings), base_toml))


def _settings(settings: object) -> list[tuple[str, str]]:
    """``(dotted key, text)`` pairs, as the CLI passes them, checked."""
    if settings is None:
        return []
    rule = "must be a list of (dotted key, text) pairs, such as [('pcie.lanes', '8')]"
    if isinstance(settings, (str, bytes, Mapping)) or not isinstance(settings, Iterable):
        raise _arg_error("settings", settings, rule)
    pairs = list(settings)
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise _arg_error(f"settings[{i}]", pair, rule)
        for x in pair:
            _check_text(x, f"settings[{i}]")
    return [(k, v) for k, v in pairs]


def _path_arg(value: object, name: str) -> str:
    """A file path argument as text: an :class:`InputError` naming the argument if it is not a
    path, or has no UTF-8 form (the core takes paths as UTF-8)."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise InputError(f"{name} = {value!r}: must be a file path")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{name} = {text!r}: a path ssdlab can open is valid UTF-8 text") from None
    return text


def _text_arg(value: object, name: str, optional: bool = False) -> Optional[str]:
    """A text argument (None allowed if ``optional``), checked: a :class:`ConfigError` naming it."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _arg_error(name, value, "must be text")
    _check_text(value, name)
    return value


def _bool_arg(value: object, name: str) -> bool:
    """True or False (1, 0 and other truthy things are refused: a ConfigError naming it)."""
    if not isinstance(value, bool):
        raise _arg_error(name, value, "must be True or False")
    return value


def _callable_arg(value: object, name: str) -> Optional[Callable[..., Any]]:
    """A callback or None."""
    if value is not None and not callable(value):
        raise _arg_error(name, value, "must be a function (or None)")
    return value


def _int_arg(value: object, name: str, low: int, high: int = (1 << 63) - 1, optional: bool = False) -> Optional[int]:
    """A whole number from ``low`` to ``high`` (None allowed if ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _arg_error(name, value, f"must be a whole number from {low} to {high}")
    return value


def _mapping_of_text(value: object, name: str) -> Optional[dict[str, str]]:
    """A mapping of text to text (such as an environment), or None."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise _arg_error(name, value, "must be a mapping of text to text")
    for k, v in value.items():
        _check_text(k, name)
        _check_text(v, f"{name}[{k!r}]")
    return dict(value)


def _check_text(text: str, path: str) -> None:
    """Refuses a string that has no UTF-8 form (a lone surrogate such as '\\ud800')."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _arg_error(path, text, f"is not valid text: {text[e.start:e.end]!r} at {e.start} is a lone surrogate, which has no UTF-8 form") from None


def _arg_error(path: str, value: object, rule: str) -> ConfigError:
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return ConfigError(f"invalid configuration (1 problem):\n  - {path} = {shown}: {rule}", [{"path": path, "value": shown, "rule": rule}])


def _seed(seed: object) -> int:
    """A seed: a whole number (1.5 or True are refused, as is anything that is not one)."""
    if isinstance(seed, bool):
        raise _arg_error("seed", seed, "must be a whole number")
    try:
        return operator.index(seed)  # type: ignore[arg-type]
    except TypeError:
        raise _arg_error("seed", seed, "must be a whole number") from None


def _check_tree(obj: object, path: str, depth: int = 0, seen: Optional[set] = None) -> None:
    """Refuses a config tree that contains itself, nests deeper than any config does, or holds
    a string (key or value) with no UTF-8 form (before the core walks it)."""
    if isinstance(obj, str):
        _check_text(obj, path)
    if not isinstance(obj, (Mapping, list, tuple)):
        return
    seen = seen if seen is not None else set()
    if id(obj) in seen:
        raise _arg_error(path, "...", "contains itself")
    if depth > 32:
        raise _arg_error(path, "...", "nests more than 32 levels deep")
    seen.add(id(obj))
    items = obj.items() if isinstance(obj, Mapping) else enumerate(obj)
    for k, v in items:
        if isinstance(k, str):
            _check_text(k, f"{path} key")
        _check_tree(v, f"{path}.{k}" if isinstance(obj, Mapping) else f"{path}[{k}]", depth + 1, seen)
    seen.discard(id(obj))


def presets() -> pd.DataFrame:
    """The preset library: one row per preset with its description."""
    import pandas as pd

    rows = _core.presets_list()
    return pd.DataFrame(rows, columns=["name", "description"]).set_index("name")


def metrics(config: ConfigLike = None, **kwargs: Any) -> pd.DataFrame:
    """Every metric a run of ``config`` reports: name (index), unit, kind and description.
    Keyword arguments are those of :func:`load_config`."""
    import pandas as pd

    cfg = load_config(config, **kwargs)
    rows = _core.Simulation(cfg._native, False).metrics()
    return pd.DataFrame(rows, columns=["name", "unit", "kind", "description"]).set_index("name")


def components() -> list[str]:
    """The latency-breakdown components, in the order an I/O meets them."""
    return list(_core.components())


class Result:
    """What a run produced: the summary dict and tables built from it."""

    def __init__(self, config: Config, summary: dict[str, Any], io_log: Optional[dict[str, bytes]] = None, metric_info: Optional[list[tuple[str, str, str, str]]] = None) -> None:
        self.config = config
        self.summary = summary
        self._io_log = io_log
        # (name, unit, kind, description) of every metric, from the core's registry.
        self.metric_info = list(metric_info or [])

    @property
    def latency(self) -> pd.DataFrame:
        """Latency statistics in microseconds, one row per direction that had I/O."""
        import pandas as pd

        rows = {}
        for op in OPS:
            s = self.summary[op]
            if s["ios"] == 0:
                continue
            lat = s["latency_us"]
            row = {"ios": s["ios"], "iops": s["iops"], "bandwidth_mib_s": s["bandwidth_mib_s"]}
            for k in ("min", "mean", "stddev", "p50", "p90", "p99", "p999", "p9999", "max"):
                row[f"{k}_us"] = lat[k]
            for p, v in lat["percentiles"].items():
                row[f"p{p}_us"] = v
            rows[op] = row
        return pd.DataFrame.from_dict(rows, orient="index")

    @property
    def breakdown(self) -> pd.DataFrame:
        """Mean microseconds per component of the path, per direction and over all I/O."""
        import pandas as pd

        rows = {op: self.summary[op]["breakdown_us"] for op in OPS if self.summary[op]["ios"] > 0}
        rows["all"] = self.summary["breakdown_us"]
        return pd.DataFrame.from_dict(rows, orient="index")[components()]

    @property
    def metrics(self) -> dict[str, float]:
        """Every metric of the run over the measurement window, flat: ``{dotted name: value}``
        (what a sweep turns into columns; :func:`metrics` describes each)."""
        return dict(self.summary["metrics"])

    @property
    def tenants(self) -> pd.DataFrame:
        """One row per tenant: I/Os, IOPS, bandwidth and latency per direction; its weight, class,
        weight ratio and proportionality (bandwidth over the smallest-weight tenant's); on a
        NAND drive shared by tenants, its WAF and the units GC moved on its behalf (its own and
        the others'); and per SLO the share of series intervals that met it."""
        import pandas as pd

        rows = {}
        for t in self.summary["tenants"]:
            row: dict[str, Any] = {"ios": t["ios"], "iops": t["iops"], "bandwidth_mib_s": t["bandwidth_mib_s"]}
            for op in OPS:
                o = t[op]
                row[f"{op}_ios"] = o["ios"]
                for k in ("mean", "p50", "p99", "max"):
                    row[f"{op}_{k}_us"] = o["latency_us"][k]
            for k in ("weight", "class", "weight_ratio", "proportionality"):
                row[k] = t[k]
            for k, v in (t.get("flash") or {}).items():
                row[k] = v
            for slo in t.get("slo", []):
                row[f"slo_{slo['kind']}_target"] = slo["target"]
                row[f"slo_{slo['kind']}_compliance"] = slo["compliance"]
            rows[t["name"]] = row
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("tenant")

    @property
    def timeseries(self) -> Optional[pd.DataFrame]:
        """The time series of a run with ``stats.interval``: one row per interval and tenant
        (``tenant == "all"`` rows add the device metrics), or None."""
        ts = self.summary.get("timeseries")
        if ts is None:
            return None
        import pandas as pd

        return pd.DataFrame(ts["rows"])

    @property
    def ios(self) -> Optional[pd.DataFrame]:
        """One row per counted I/O (when run with ``keep_ios=True``): its job, NVMe I/O queue
        (each job has its own queue pair, ids from 1) and tenant, then op, offset, length and
        times in microseconds."""
        if self._io_log is None:
            return None
        import numpy as np
        import pandas as pd

        log = self._io_log
        u64 = lambda k: np.frombuffer(log[k], dtype="<u8")  # noqa: E731
        job = np.frombuffer(log["job"], dtype="<u4")
        tenant = np.frombuffer(log["tenant"], dtype="<u4")

        def named(codes: np.ndarray, names: list[str]) -> Any:
            ok = len(names) > int(codes.max(initial=0))
            return pd.Categorical.from_codes(codes.astype(np.int32), names) if ok else codes

        df = pd.DataFrame(
            {
                "job": named(job, [j["name"] for j in self.summary.get("jobs", [])]),
                "queue": job.astype(np.uint32) + 1,
                "tenant": named(tenant, [t["name"] for t in self.summary.get("tenants", [])] or ["default"]),
                "op": pd.Categorical.from_codes(np.frombuffer(log["op"], dtype=np.uint8), list(OPS)),
                "offset": u64("offset"),
                "len": u64("len"),
                "issued_us": u64("issued_ps") / 1e6,
                "latency_us": u64("latency_ps") / 1e6,
            }
        )
        for c in components():
            df[f"{c}_us"] = u64(f"{c}_ps") / 1e6
        return df

    def __repr__(self) -> str:
        s = self.summary
        return f"<ssdlab.Result {s['ios']} I/Os, {s['iops']:.0f} IOPS, {s['bandwidth_mib_s']:.1f} MiB/s>"


def _flat(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested table as ``{dotted key: value}``."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(_flat(v, key))
        else:
            out[key] = v
    return out


def config_record(config: ConfigLike, cfg: Config) -> dict[str, Any]:
    """What a report needs to name a run's device and workload: the preset or file it came from
    (``base``), its description, the resolved config as TOML, and every key whose value
    differs from the base's (``diff``: key, the base's value, the run's)."""
    base_name = "default" if config is None else os.fspath(config) if isinstance(config, (str, os.PathLike)) else "(a Config)"
    try:
        base = _flat(load_config(config).table) if isinstance(config, (str, os.PathLike)) or config is None else {}
    except (ConfigError, InputError):
        base = {}
    run = _flat(cfg.table)
    diff = [{"key": k, "base": base.get(k), "value": v} for k, v in run.items() if base and base.get(k) != v]
    return {"base": base_name, "description": cfg.description, "hash": cfg.hash, "diff": diff, "toml": cfg.toml}


def _with_eta(progress: Optional[Callable[..., Any]]) -> Optional[Callable[[float], Any]]:
    """``progress`` as the core calls it (with the fraction), adding the ETA when it takes it."""
    if progress is None:
        return None
    import inspect
    import time as _time

    try:
        params = [p for p in inspect.signature(progress).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
        two = len(params) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)
    except (TypeError, ValueError):  # builtins without a signature
        two = False
    if not two:
        return progress
    start = _time.monotonic()

    def call(fraction: float) -> Any:
        elapsed = _time.monotonic() - start
        eta = elapsed * (1.0 - fraction) / fraction if 0.0 < fraction < 1.0 else (0.0 if fraction >= 1.0 else None)
        return progress(fraction, eta)

    return call


def run(
    config: ConfigLike = None,
    workload: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    *,
    set: Optional[Mapping[str, Any]] = None,  # noqa: A002
    settings: Optional[list[tuple[str, str]]] = None,
    progress: Optional[Callable[[float], None]] = None,
    keep_ios: bool = False,
    max_memory: Union[None, int, str] = None,
) -> Result:
    """Runs a simulation and returns its :class:`Result`.

    The run releases the GIL and stops with KeyboardInterrupt on Ctrl-C. ``progress`` is called
    every 100 ms of wall time and once at the end: as ``progress(fraction)``, or, if it takes
    two arguments, ``progress(fraction, eta_s)`` with the seconds left at the pace so far (None
    until it can tell); on an aged drive, ageing it is the first half of the fraction and the
    run the second. Arguments are those of :func:`load_config`; ``keep_ios`` keeps one row
    per I/O (``Result.ios``). A run whose estimated memory exceeds ``max_memory`` (bytes, or a
    size such as ``"16GiB"``; default half the machine's memory) is a :class:`ConfigError` before
    anything is allocated.
    """
    cfg = load_config(config, workload=workload, seed=seed, set=set, settings=settings)
    for a in cfg.advisories:
        warnings.warn(ConfigWarning(f"{a['path']} = {a['value']}: {a['rule']}"), stacklevel=2)
    _bool_arg(keep_ios, "keep_ios")
    _callable_arg(progress, "progress")
    step = _with_eta(progress)
    build, simulate = step, step
    if step is not None and cfg.table.get("ftl", {}).get("precondition") == "aged":
        # Ageing the drive is the first half of the progress, the run the second.
        build, simulate = (lambda f: step(f / 2)), (lambda f: step(0.5 + f / 2))
    sim = _core.Simulation(cfg._native, keep_ios, _memory_limit(max_memory), build)
    summary = json.loads(sim.run(simulate))
    return Result(cfg, summary, sim.io_log(), sim.metrics())


def _memory_limit(value: Union[None, int, str]) -> Optional[int]:
    """``max_memory`` in bytes (None: the core's default)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _arg_error("max_memory", value, "must be a size in bytes, or such as \"16GiB\"")
    try:
        n = value if isinstance(value, int) else _core.parse_size(value)
    except ValueError as e:
        raise _arg_error("max_memory", value, str(e)) from None
    if not 0 < n < 1 << 64:
        raise _arg_error("max_memory", value, "must be more than zero (and below 16 EiB)")
    return n


# fio's default `percentile_list` (fio HOWTO).
FIO_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99)

# fio's defaults for what a job file leaves unset (fio HOWTO: rw=read, bs=4k, iodepth=1).
FIO_DEFAULTS = {"rw": "read", "bs": "4k", "iodepth": 1, "numjobs": 1}


def _without_workload(toml_text: str) -> str:
    """The resolved config with its `[workload]` table removed, so a job file replaces it whole."""
    keep, skipping = [], False
    for line in toml_text.splitlines():
        if line.startswith("["):
            skipping = line.strip() == "[workload]" or line.startswith(("[workload.", "[[workload."))
        if not skipping:
            keep.append(line)
    return "\n".join(keep) + "\n"


def _jobfile_problem(group: Any, issue: Mapping[str, str]) -> str:
    """A config problem of a job-file run, pointed at the job file's line when it comes from it."""
    m = re.match(r"^workload\.jobs\[(\d+)\]\.(\w+)$", issue["path"])
    if m:
        return f"{group.where(int(m.group(1)), m.group(2))}: {m.group(2)} = {issue['value']}: {issue['rule']}"
    m = re.match(r"^workload\.(\w+)$", issue["path"])
    if m and group.sources:
        # A group-wide value (numjobs): at the first job that sets it, else its section.
        places = [group.where(i, m.group(1)) for i in range(len(group.sources))]
        at = next((w for w, src in zip(places, group.sources) if m.group(1) in src.options), places[0])
        return f"{at}: {m.group(1)} = {issue['value']}: {issue['rule']}"
    return f"{issue['path']} = {issue['value']}: {issue['rule']}"


def load_jobfile(
    jobfile: str | os.PathLike[str],
    device: ConfigLike = None,
    *,
    seed: Optional[int] = None,
    set: Optional[Mapping[str, Any]] = None,  # noqa: A002
    settings: Optional[list[tuple[str, str]]] = None,
    env: Optional[Mapping[str, str]] = None,
    text: Optional[str] = None,
    fio_percentiles: bool = False,
) -> JobPlan:
    """A fio job file on a simulated device: one :class:`Config` per fio group (groups run one
    after another, split at `stonewall`/`new_group`), and the options the file set that have no
    meaning for a simulated device. The device's own `[workload]` is replaced by the file's.
    ``text`` is the job file's content (``jobfile`` then only names it); ``fio_percentiles``
    asks for fio's default latency percentiles (for :func:`fio_json`)."""
    from . import fiojob

    jobfile = _path_arg(jobfile, "jobfile")
    settings = _settings(settings)
    env = _mapping_of_text(env, "env")
    text = _text_arg(text, "text", optional=True)
    fio_percentiles = _bool_arg(fio_percentiles, "fio_percentiles")
    if set is not None and not isinstance(set, Mapping):
        raise _arg_error("set", set, "must be a mapping of dotted keys to values")
    groups, ignored = fiojob.load(jobfile, env, text)
    dev_settings = [s for s in settings or [] if not s[0].startswith("workload.")]
    if fio_percentiles:
        dev_settings.append(("stats.percentiles", "[" + ", ".join(str(p) for p in FIO_PERCENTILES) + "]"))
        dev_settings.append(("stats.fio_bins", "true"))
    try:
        dev = load_config(device, set=set, settings=dev_settings)
    except ConfigError as err:
        # The device's own [workload] may not fit the device as set (say, 4 KiB blocks on an
        # extended LBA format); the job file replaces it, so check the device with its first job.
        first = next((j for g in groups for j in g.jobs), None)
        if first is None or not all(i["path"].startswith("workload.") for i in issues(err)):
            raise
        fit = dict(set or {}, **{"workload.bs": str(first.get("bs", "4096")), "workload.offset": 0})
        dev = load_config(device, set=fit, settings=dev_settings)
    base = _without_workload(dev.toml)
    wl_settings = [s for s in settings or [] if s[0].startswith("workload.")]
    configs = []
    for g in groups:
        ftl = dev.table.get("ftl", {})
        zone, handles = _parse_bytes(ftl.get("zone_size")), int(ftl.get("fdp_handles", 0) or 0) if ftl.get("placement") == "fdp" else 0
        interface = str(dev.table.get("nvme", {}).get("interface", "nvme"))
        g.jobs = [fiojob.resolve(e, dev.capacity, zone, handles, interface) for e in g.jobs]
        # Overrides win (`-w number_ios=...`, `settings`): a job's own value of the key gives
        # way to the group-wide one they set.
        for key in {k.split(".", 1)[1] for k, _ in wl_settings if k.count(".") == 1}:
            for e in g.jobs:
                e.pop(key, None)  # fio's shares of the device, in bytes
        workload: dict[str, Any] = dict(FIO_DEFAULTS, **{k: v for k, v in g.workload.items() if "." not in k}, jobs=g.jobs)
        if g.jobs and all("bs" in j for j in g.jobs):
            workload["bs"] = g.jobs[0]["bs"]  # fio's 4k default is never used: not checked against the device either
        stats = {k.split(".", 1)[1]: v for k, v in g.workload.items() if k.startswith("stats.")}
        if seed is not None:
            workload["randseed"] = _seed(seed)
        try:
            native = _core.Config(None, {"workload": workload, **({"stats": stats} if stats else {})}, wl_settings, base)
        except ConfigError as err:
            raise WorkloadError("\n".join(_jobfile_problem(g, i) for i in issues(err))) from None
        configs.append(Config(native))
    return JobPlan(str(jobfile), configs, groups, ignored)


def _parse_bytes(v: Any) -> Optional[int]:
    """A size from a resolved config table (an integer, or a string with a unit), if set."""
    if v is None:
        return None
    return int(v) if isinstance(v, int) else _core.parse_size(str(v))


class JobPlan:
    """A job file mapped onto a device: a config per fio group, and what the file ignored."""

    def __init__(self, name: str, configs: list[Config], groups: list[Any], ignored: list[str]) -> None:
        self.name = name
        self.configs = configs
        self.groups = groups
        self.ignored = ignored

    def run(self, progress: Optional[Callable[[float], None]] = None, max_memory: Union[None, int, str] = None) -> list[Result]:
        """Runs the groups one after another, each on a freshly built device. A group with a
        job whose `exit_what` is `all` (under `exitall`) is the last: when that job ends, fio
        ends every job, and the groups after it never start. ``max_memory`` is :func:`run`'s."""
        out = []
        n = len(self.configs)
        for i, cfg in enumerate(self.configs):
            step = (lambda f, i=i: progress((i + f) / n)) if progress else None
            out.append(run(cfg, progress=step, max_memory=max_memory))
            if any(j.get("exit_scope") == "all" and not j.get("exit_on_error") for j in self.groups[i].jobs):
                break
        return out


# fio's latency buckets (stat.c, io_u_mark_lat_*): the upper bound of each, in ns, us and ms.
_LAT_KEYS = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"]
_LAT_MS_KEYS = _LAT_KEYS + ["2000", ">=2000"]
_DEPTH_KEYS = ["1", "2", "4", "8", "16", "32", ">=64"]
_REAP_KEYS = ["0", "4", "8", "16", "32", "64", ">=64"]


def _bucket(v: int, bounds: list[int]) -> int:
    """The index of the first bound above `v` (the last bucket takes the rest)."""
    return next((i for i, b in enumerate(bounds) if v < b), len(bounds) - 1)


def _latency_buckets(bins: list[list[int]], total: int) -> tuple[dict, dict, dict]:
    """fio's `latency_ns`, `latency_us` and `latency_ms`: the share (per cent) of I/Os whose
    completion latency falls in each bucket (below 1 us by ns, below 1 ms by us, then by ms),
    from the latencies in fio's bins."""
    ns, us, ms = [0.0] * 10, [0.0] * 10, [0.0] * 12
    bounds = [int(k) for k in _LAT_KEYS]
    for value, count in bins:
        if value < 1000:
            ns[_bucket(value, bounds)] += count
        elif value < 1_000_000:
            us[_bucket(value // 1000, bounds)] += count
        else:
            ms[_bucket(value // 1_000_000, bounds + [2000, 2**63])] += count
    pct = (lambda x: 100.0 * x / total) if total else (lambda x: 0.0)
    return ({k: pct(v) for k, v in zip(_LAT_KEYS, ns)}, {k: pct(v) for k, v in zip(_LAT_KEYS, us)}, {k: pct(v) for k, v in zip(_LAT_MS_KEYS, ms)})


def _ps(entry: Mapping[str, Any], key: str) -> int:
    """A job's time option, as the job file's parser wrote it (``"1000ps"``), in picoseconds."""
    return int(str(entry.get(key, "0ps")).removesuffix("ps"))


def fio_json(plan: JobPlan, results: list[Result], plus: bool = False) -> dict[str, Any]:
    """Results in fio's `--output-format=json` layout (fio 3.x key names, every key real fio
    3.33 writes), so fio tooling reads them; ``plus`` adds json+'s `bins` (completion latencies
    in fio's own histogram buckets, which fio's `fio_jsonplus_clat2csv` reads).

    Times are simulated; bandwidth "samples" are one sample of the run's mean (no time series
    here); CPU use is the host model's; `disk_util` is the simulated device's (one disk per
    group: requests, their time at the device, and the time it had any); `iodepth_submit` is one
    I/O per submission (ssdlab submits no batches); the `latency_target` keys are fio's values
    with no latency target. The latency buckets are counted from the completion latencies' bins,
    so an I/O within fio's bucket resolution (1/64) of a bucket edge may land in the
    neighbouring bucket."""
    import time as _time

    from . import __version__

    def lat(s: Mapping[str, Any], n: int, pct: bool, bins: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": n}
        if n:
            d.update(min=round(s["min"] * 1e3), max=round(s["max"] * 1e3), mean=s["mean"] * 1e3, stddev=s["stddev"] * 1e3)
            if pct:
                d["percentile"] = {f"{float(k):.6f}": round(v * 1e3) for k, v in sorted(s["percentiles"].items(), key=lambda kv: float(kv[0]))}
            if bins:
                d["bins"] = {str(v): c for v, c in s.get("bins", [])}
        return d

    def op(o: Mapping[str, Any], runtime_ms: int) -> dict[str, Any]:
        n = int(o["ios"])
        bw_kib = o["bandwidth_mib_s"] * 1024.0
        bw = int(bw_kib)
        return {
            "io_bytes": o["bytes"], "io_kbytes": o["bytes"] // 1024, "bw_bytes": int(o["bandwidth_mib_s"] * 1048576.0),
            "bw": bw, "iops": o["iops"], "runtime": runtime_ms if n else 0, "total_ios": n, "short_ios": 0, "drop_ios": 0,
            "slat_ns": lat(o["slat_us"], n, False), "clat_ns": lat(o["clat_us"], n, True, plus), "lat_ns": lat(o["latency_us"], n, False),
            "bw_min": bw, "bw_max": bw, "bw_agg": 100.0 if n else 0.0, "bw_mean": bw_kib, "bw_dev": 0.0, "bw_samples": 1 if n else 0,
            "iops_min": int(o["iops"]), "iops_max": int(o["iops"]), "iops_mean": o["iops"], "iops_stddev": 0.0, "iops_samples": 1 if n else 0,
        }

    def shares(counts: list[int], keys: list[str]) -> dict[str, float]:
        total = sum(counts)
        return {k: (100.0 * c / total if total else 0.0) for k, c in zip(keys, list(counts) + [0] * (len(keys) - len(counts)))}

    now = _time.time()
    jobs = []
    disks: list[dict[str, Any]] = []
    for gid, (group, res) in enumerate(zip(plan.groups, results)):
        s = res.summary
        m = s["metrics"]
        cpu = 100.0 * s["utilisation"]["host_cpu"]
        for i, j in enumerate(s["jobs"]):
            # Each job's own time, as fio reports it (its rates are over it too).
            runtime_ms = round(j["runtime_s"] * 1e3)
            # With group_reporting an entry merges a reporting group's jobs (fio's layout);
            # its options are its first job's.
            i = (j.get("members") or [i])[0]
            src = group.sources[i]
            total = sum(int(j[o]["ios"]) for o in OPS)
            bins = [b for o in OPS for b in j[o]["clat_us"].get("bins", [])]
            lat_ns, lat_us, lat_ms = _latency_buckets(bins, total)
            entry = group.jobs[i]
            jobs.append({
                "jobname": j["name"], "groupid": int(entry.get("group", gid)), "error": _errno(j.get("error")), "eta": 0, "elapsed": max(1, round(s["sim_time_s"])),
                "job options": {k: (o.value if o.value is not None else "") for k, o in src.options.items()},
                "read": op(j["read"], runtime_ms), "write": op(j["write"], runtime_ms), "trim": op(j["trim"], runtime_ms),
                "sync": {"total_ios": 0, "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}},
                "job_runtime": round(j["jobs_runtime_s"] * 1e3) if j.get("jobs_runtime_s") is not None else runtime_ms, "usr_cpu": 0.0, "sys_cpu": cpu, "ctx": 0, "majf": 0, "minf": 0,
                "iodepth_level": shares(j.get("iodepth_level", []), _DEPTH_KEYS),
                "iodepth_submit": {k: (100.0 if k == "4" and total else 0.0) for k in _REAP_KEYS},
                "iodepth_complete": shares(j.get("iodepth_complete", []), _REAP_KEYS),
                "latency_ns": lat_ns, "latency_us": lat_us, "latency_ms": lat_ms,
                "latency_depth": int(j.get("latency_depth") or entry.get("iodepth", 1)),
                "latency_target": _ps(entry, "latency_target") // 1000, "latency_percentile": float(entry.get("latency_percentile", 100.0)),
                "latency_window": _ps(entry, "latency_window") // 1_000_000,
                "ssdlab": {"config_hash": s["config_hash"], "seed": s["seed"], "breakdown_us": s["breakdown_us"]},
            })
        span_ps = s["sim_time_s"] * 1e12
        ms = 1e-9  # per ps
        disks.append({
            "name": f"ssdlab{gid}", "read_ios": int(m.get("host.disk.read_ios", 0)), "write_ios": int(m.get("host.disk.write_ios", 0)),
            "read_merges": 0, "write_merges": 0, "read_ticks": round(m.get("host.disk.read_ticks", 0) * ms),
            "write_ticks": round(m.get("host.disk.write_ticks", 0) * ms), "in_queue": round(m.get("host.disk.in_queue", 0) * ms),
            "util": 100.0 * m.get("host.disk.busy", 0) / span_ps if span_ps else 0.0,
        })
    return {
        "fio version": f"ssdlab-{__version__}", "timestamp": int(now), "timestamp_ms": int(now * 1e3),
        "time": _time.strftime("%a %b %d %H:%M:%S %Y", _time.localtime(now)),
        "global options": dict(plan.groups[0].global_options) if plan.groups else {}, "jobs": jobs, "disk_util": disks,
    }


def _errno(error: Optional[str]) -> int:
    """fio's error number for a job that ended early: ETIMEDOUT for a latency target missed at
    depth 1, EIO for a minimum rate not met."""
    if not error:
        return 0
    return 110 if "exceeds specified max" in error else 5


def fio_terse(plan: JobPlan, results: list[Result]) -> str:
    """fio's `--output-format=terse` (version 3, fio 3.x): one line per job, semicolon-separated,
    the fields of fio's HOWTO (read and write; latencies in us, bandwidth in KiB/s), then the
    group's disk in `disk_util`'s fields."""
    doc = fio_json(plan, results)

    def num(x: float) -> str:
        return f"{x:.6f}"

    def lat(x: Mapping[str, Any]) -> list[str]:
        return [str(x["min"] // 1000), str(x["max"] // 1000), num(x["mean"] / 1e3), num(x["stddev"] / 1e3)]

    lines = []
    for job in doc["jobs"]:
        f: list[str] = ["3", doc["fio version"], job["jobname"], str(job["groupid"]), str(job["error"])]
        for ddir in ("read", "write"):  # v3 has no trim section
            o = job[ddir]
            f += [str(o["io_kbytes"]), str(o["bw"]), str(round(o["iops"])), str(o["runtime"])]
            f += lat(o["slat_ns"]) + lat(o["clat_ns"])
            pct = [f"{float(k):f}%={round(v / 1e3)}" for k, v in o["clat_ns"].get("percentile", {}).items()]
            pct = pct or [f"{p:f}%=0" for p in FIO_PERCENTILES]
            f += (pct + ["0%=0"] * 20)[:20]
            f += lat(o["lat_ns"])
            f += [str(o["bw_min"]), str(o["bw_max"]), f"{o['bw_agg']:f}%", num(o["bw_mean"]), num(o["bw_dev"])]
        f += [f"{job['usr_cpu']:f}%", f"{job['sys_cpu']:f}%", str(job["ctx"]), str(job["majf"]), str(job["minf"])]
        f += [f"{v:.1f}%" for v in job["iodepth_level"].values()]
        f += [f"{v:.2f}%" for v in job["latency_us"].values()]
        f += [f"{v:.2f}%" for v in job["latency_ms"].values()]
        d = doc["disk_util"][job["groupid"]]
        f += [d["name"], str(d["read_ios"]), str(d["write_ios"]), str(d["read_merges"]), str(d["write_merges"]),
              str(d["read_ticks"]), str(d["write_ticks"]), str(d["in_queue"]), f"{d['util']:.2f}%"]
        lines.append(";".join(f))
    return "\n".join(lines) + "\n"
