"""The exceptions ssdlab raises, all subclasses of :class:`SsdlabError`.

They are declared in the native module (one place maps core errors to them) and re-exported
here. A :class:`ConfigError` carries every problem of a config in ``err.args[1]``: a list of
dicts with ``path`` (dotted key), ``value`` (as written) and ``rule``; :func:`issues` returns it.
A :class:`WorkloadError` raised by the core carries its one problem the same way.
"""

from __future__ import annotations

from ssdlab._core import ConfigError, InputError, SimulationError, SsdlabError, TraceError, WorkloadError

__all__ = ["ConfigError", "InputError", "SimulationError", "SsdlabError", "TraceError", "WorkloadError", "issues"]


def issues(err: BaseException) -> list[dict[str, str]]:
    """The problems a :class:`ConfigError` (or a core :class:`WorkloadError`) carries; else empty."""
    if isinstance(err, (ConfigError, WorkloadError)) and len(err.args) > 1:
        return list(err.args[1])
    return []
