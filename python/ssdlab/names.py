"""The names the core uses for its policies and kinds of I/O, read from the core so that Python
keeps no lists of its own: the ATC's eviction policies (``atc_policy``), the host's buffer reuse
(``buffer_reuse``) and DMA layouts (``dma_layout``), the kinds of request (``op``) and the
directions I/O statistics count (``direction``), each in the core's order."""

from __future__ import annotations

from ssdlab import _core

_TABLE: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {kind: (tuple(names), frozenset(spellings)) for kind, names, spellings in _core.names()}


def names(kind: str) -> tuple[str, ...]:
    """The names of ``kind``, in the core's order (how the core prints them)."""
    return _TABLE[kind][0]


def accepts(kind: str, text: str) -> bool:
    """Whether the core takes ``text`` as a name of ``kind`` (its aliases too, such as ``rr``)."""
    return text in _TABLE[kind][1]


def listing(kind: str) -> str:
    """The names of ``kind`` as prose: ``a, b or c``."""
    n = names(kind)
    return ", ".join(n[:-1]) + " or " + n[-1] if len(n) > 1 else n[0]
