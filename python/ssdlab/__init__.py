"""ssdlab: a laboratory for NVMe SSD architecture.

Follows each I/O from the application through the host stack, PCIe, the NVMe queues, the
controller and the media, and back, and tells where every nanosecond went.

>>> import ssdlab
>>> r = ssdlab.run("default", workload={"iodepth": 1, "number_ios": 1000})
>>> round(r.summary["read"]["latency_us"]["mean"], 1) > 0
True
"""

from typing import TYPE_CHECKING, Any

from ssdlab._core import __version__
from ssdlab.api import Config, Result, components, load_config, metrics, presets, run
from ssdlab.decompose import decompose, plot_decomposition
from ssdlab.exceptions import ConfigError, ConfigWarning, InputError, SimulationError, SsdlabError, StoreWarning, TraceError, WorkloadError
from ssdlab.series import plot_timeseries

if TYPE_CHECKING:
    from ssdlab.lab import open_store, sweep

__all__ = [
    "Config",
    "ConfigError",
    "ConfigWarning",
    "InputError",
    "Result",
    "SimulationError",
    "SsdlabError",
    "StoreWarning",
    "TraceError",
    "WorkloadError",
    "__version__",
    "components",
    "decompose",
    "load_config",
    "metrics",
    "open_store",
    "plot_decomposition",
    "plot_timeseries",
    "presets",
    "run",
    "sweep",
]


def __getattr__(name: str) -> Any:
    """``sweep`` and ``open_store`` come from :mod:`ssdlab.lab` at their first use: it and the
    store behind it (hashing, uuid, Parquet's helpers) are not needed to run a simulation."""
    if name in ("open_store", "sweep"):
        from ssdlab import lab

        return getattr(lab, name)
    raise AttributeError(f"module 'ssdlab' has no attribute {name!r}")
