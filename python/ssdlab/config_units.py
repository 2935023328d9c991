"""Unit parsing for options the CLI handles itself (configs are parsed by the core)."""

from __future__ import annotations

import re

from ssdlab.exceptions import ConfigError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB])?\s*$")


def parse_size(text: str, path: str) -> int:
    """Bytes from ``4k``, ``4KiB``, ``1M`` or ``4096`` (k/M/G/T are powers of 1024, as in fio)."""
    m = _SIZE.match(str(text))
    if not m:
        raise ConfigError(f"{path} = {text}: not a size", [{"path": path, "value": str(text), "rule": "a size such as 4k or 4096"}])
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)
