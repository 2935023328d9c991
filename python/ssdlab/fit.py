"""Calibration of a library drive's unknowns on its declared training figures.

A drive's preset holds three kinds of numbers: facts (cited), calibrated unknowns (what no
source publishes: a channel rate, a controller's cost, a power budget) and, outside the preset,
predictions (every published figure not in the training set). Each unknown is fitted to one
training figure of :mod:`ssdlab.validate`, in the order declared, by bisection of its value
(on a log scale) until the run lands on the published figure; later unknowns are fitted with the
earlier ones already set. ``ssdlab validate --fit DRIVE`` runs the fit and prints the values, as
the preset's lines; the preset carries them with a ``[CAL]`` note naming the figure.

The fit assumes the figure moves one way with the unknown over its range (it checks the two
ends) and stops after ``steps`` halvings or within ``tol``; when it ends farther than ``tol``
(a figure that steps rather than slides with the unknown), it tries ``refine`` values within
a factor of 1.5 of its best and keeps the closest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

from .exceptions import ConfigError


@dataclass(frozen=True)
class Unknown:
    """A preset number no source publishes, and the training figure it is fitted to."""

    #: The config key (dotted).
    key: str
    #: The name of the drive's training figure (:attr:`ssdlab.validate.Figure.name`).
    figure: str
    #: The search range, in the key's unit; integer keys are rounded.
    lo: float
    hi: float
    #: The unit the value is written in ("" for a plain number, "us", "MB/s", "MHz").
    unit: str = ""
    integer: bool = False
    #: What the number is, for the reader.
    what: str = ""

    def value(self, x: float) -> object:
        if self.integer:
            return int(round(x))
        x = float(f"{x:.4g}")  # four significant digits, written without an exponent
        return f"{x:g}{self.unit}" if self.unit else x


@dataclass
class Fitted:
    unknown: Unknown
    value: object
    published: float
    measured: float

    @property
    def error(self) -> float:
        return (self.measured - self.published) / self.published


def fit(drive: str, steps: int = 14, tol: float = 0.002, refine: int = 13, progress: Optional[Callable[[float], None]] = None) -> list[Fitted]:
    """Fits `drive`'s calibrated unknowns in order; returns each one's value and its training
    figure, published and as the fitted drive runs it."""
    from . import validate as v

    unknowns = v.CALIBRATED.get(drive)
    if not unknowns:
        raise ConfigError(f"fit: {drive!r} declares no calibrated unknowns; the drives that do: {', '.join(v.CALIBRATED)}")
    figs = {f.name: f for f in v.DEVICES[drive]}
    chosen: dict[str, object] = {}
    out = []
    for i, u in enumerate(unknowns):
        f = figs[u.figure]
        if not f.train:
            raise ConfigError(f"fit: {drive}'s unknown {u.key} is fitted to {u.figure!r}, which is not in its training set")

        def measure(x: float, u: Unknown = u, f: v.Figure = f) -> float:
            settings = {**f.settings, **chosen, u.key: u.value(x)}
            return v.measure(drive, f, settings)

        lo, hi = math.log(u.lo), math.log(u.hi)
        m_lo, m_hi = measure(u.lo), measure(u.hi)
        rising = m_hi > m_lo
        best = min((abs(m_lo - f.published), u.lo, m_lo), (abs(m_hi - f.published), u.hi, m_hi))
        for k in range(steps):
            mid = math.exp((lo + hi) / 2)
            m = measure(mid)
            if abs(m - f.published) < best[0]:
                best = (abs(m - f.published), mid, m)
            if abs(m / f.published - 1) <= tol:
                break
            if (m < f.published) == rising:
                lo = math.log(mid)
            else:
                hi = math.log(mid)
            if progress is not None:
                progress((i + (k + 1) / steps) / len(unknowns))
        if abs(best[2] / f.published - 1) > tol:
            # Queueing makes some figures step with the unknown rather than slide (service
            # times that fall into step with each other), and bisection can bracket a step:
            # look around the best value for a closer one.
            for j in range(refine):
                x = best[1] * 1.5 ** (2 * j / (refine - 1) - 1)
                if u.lo <= x <= u.hi:
                    m = measure(x)
                    if abs(m - f.published) < best[0]:
                        best = (abs(m - f.published), x, m)
        chosen[u.key] = u.value(best[1])
        out.append(Fitted(u, chosen[u.key], f.published, best[2]))
    if progress is not None:
        progress(1.0)
    return out


def as_toml(drive: str, fitted: list[Fitted]) -> str:
    """The fitted values as the preset's lines, each with its [CAL] note."""
    lines = [f"# ssdlab validate --fit {drive}"]
    for r in fitted:
        v = r.value if not isinstance(r.value, str) else f'"{r.value}"'
        lines.append(f'{r.unknown.key} = {v}    # [CAL] fitted to "{r.unknown.figure}": {r.measured:,.4g} against {r.published:,.4g} published')
    return "\n".join(lines)
