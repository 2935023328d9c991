"""The exceptions ssdlab raises, all subclasses of :class:`SsdlabError`.

They are declared in the native module (one place maps core errors to them) and re-exported
here. A :class:`ConfigError` carries every problem of a config in ``err.args[1]``: a list of
dicts with ``path`` (dotted key), ``value`` (as written) and ``rule``; :func:`issues` returns it.
"""

from __future__ import annotations

from ssdlab._core import ConfigError, InputError, SimulationError, SsdlabError, TraceError, WorkloadError

__all__ = ["ConfigError", "InputError", "SimulationError", "SsdlabError", "TraceError", "WorkloadError", "issues"]


def issues(err: BaseException) -> list[dict[str, str]]:
    """The list of problems a :class:`ConfigError` carries (empty for other errors)."""
    if isinstance(err, ConfigError) and len(err.args) > 1:
        return list(err.args[1])
    return []
