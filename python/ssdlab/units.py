"""Byte counts for people: the one formatter every table, title and line uses."""

from __future__ import annotations


def format_bytes(n: float) -> str:
    """Bytes in the largest IEC unit below them, to 4 significant digits: ``512 B``,
    ``4 KiB``, ``1.5 MiB``, ``2 GiB``."""
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if x < 1024:
            return f"{x:g} {unit}" if unit == "B" else f"{x:,.4g} {unit}"
        x /= 1024
    return f"{x:,.4g} PiB"
