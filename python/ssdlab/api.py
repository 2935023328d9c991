"""The Python API: build configs, run simulations, get results as dicts and DataFrames."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from ssdlab import _core

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
        _merge(overrides, {"workload": {"randseed": int(seed)}})
    return Config(_core.Config(base, overrides or None, list(settings or []), base_toml))


def presets() -> "pd.DataFrame":
    """The preset library: one row per preset with its description."""
    import pandas as pd

    rows = _core.presets_list()
    return pd.DataFrame(rows, columns=["name", "description"]).set_index("name")


def components() -> list[str]:
    """The latency-breakdown components, in the order an I/O meets them."""
    return list(_core.components())


class Result:
    """What a run produced: the summary dict and tables built from it."""

    def __init__(self, config: Config, summary: dict[str, Any], io_log: Optional[dict[str, bytes]] = None) -> None:
        self.config = config
        self.summary = summary
        self._io_log = io_log

    @property
    def latency(self) -> "pd.DataFrame":
        """Latency statistics in microseconds, one row per direction that had I/O."""
        import pandas as pd

        rows = {}
        for op in ("read", "write"):
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
    def breakdown(self) -> "pd.DataFrame":
        """Mean microseconds per component of the path, per direction and over all I/O."""
        import pandas as pd

        rows = {op: self.summary[op]["breakdown_us"] for op in ("read", "write") if self.summary[op]["ios"] > 0}
        rows["all"] = self.summary["breakdown_us"]
        return pd.DataFrame.from_dict(rows, orient="index")[components()]

    @property
    def ios(self) -> "Optional[pd.DataFrame]":
        """One row per counted I/O (when run with ``keep_ios=True``): times in microseconds."""
        if self._io_log is None:
            return None
        import numpy as np
        import pandas as pd

        log = self._io_log
        u64 = lambda k: np.frombuffer(log[k], dtype="<u8")  # noqa: E731
        df = pd.DataFrame(
            {
                "op": pd.Categorical.from_codes(np.frombuffer(log["op"], dtype=np.uint8), ["read", "write"]),
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


def run(
    config: ConfigLike = None,
    workload: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    *,
    set: Optional[Mapping[str, Any]] = None,  # noqa: A002
    settings: Optional[list[tuple[str, str]]] = None,
    progress: Optional[Callable[[float], None]] = None,
    keep_ios: bool = False,
) -> Result:
    """Runs a simulation and returns its :class:`Result`.

    The run releases the GIL, calls ``progress(fraction)`` now and then, and stops with
    KeyboardInterrupt on Ctrl-C. Arguments are those of :func:`load_config`; ``keep_ios`` keeps
    one row per I/O (``Result.ios``).
    """
    cfg = load_config(config, workload=workload, seed=seed, set=set, settings=settings)
    sim = _core.Simulation(cfg._native, keep_ios)
    summary = json.loads(sim.run(progress))
    return Result(cfg, summary, sim.io_log())
