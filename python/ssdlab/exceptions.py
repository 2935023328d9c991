"""The exceptions ssdlab raises, all subclasses of :class:`SsdlabError`.

They are declared in the native module (one place maps core errors to them) and re-exported
here. A :class:`ConfigError` carries every problem of a config in ``err.args[1]``: a list of
dicts with ``path`` (dotted key), ``value`` (as written) and ``rule``; :func:`issues` returns it.
A :class:`WorkloadError` raised by the core carries its one problem the same way.
:func:`utf8_text` reads a user's file as text, with ``file:line`` for invalid UTF-8.
"""

from __future__ import annotations

from ssdlab._core import ConfigError, InputError, SimulationError, SsdlabError, TraceError, WorkloadError

__all__ = ["ConfigError", "ConfigWarning", "InputError", "SimulationError", "SsdlabError", "StoreWarning", "TraceError", "WorkloadError", "issues", "utf8_text"]


class ConfigWarning(UserWarning):
    """Advice on a valid config: a setting that does nothing the user likely meant (tenants'
    weights that nothing enforces), as ``path = value: why``."""


class StoreWarning(UserWarning):
    """A sweep store's file set aside (torn, empty or foreign): which, why, and where it went."""


def utf8_text(data: bytes, origin: str, error: type[SsdlabError] = InputError) -> str:
    """A user's file as text: invalid UTF-8 raises ``error`` naming ``origin:line`` and the byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        row, column = data.count(b"\n", 0, e.start) + 1, e.start - data.rfind(b"\n", 0, e.start)
        raise error(f"{origin}:{row}: invalid UTF-8 at byte {column} of the line (the file must be UTF-8 text)") from None


def issues(err: BaseException) -> list[dict[str, str]]:
    """The problems a :class:`ConfigError` (or a core :class:`WorkloadError`) carries; else empty."""
    if isinstance(err, (ConfigError, WorkloadError)) and len(err.args) > 1:
        return list(err.args[1])
    return []
