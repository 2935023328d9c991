"""What the ``ssdlab`` commands share: the consoles, the user-error exception, progress on
stderr, Ctrl-C handling and the checks and parsers of command-line arguments.

The commands themselves are in :mod:`ssdlab.cli`; each one's work (running a study, printing
its tables) is in the study's own module.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, Optional, TypeVar, cast

from ssdlab import _core
from ssdlab.exceptions import SsdlabError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


class _Console:
    """A rich ``Console`` made at its first use. Importing rich takes about a fifth of a
    command's start, and a command that writes only JSON, or nothing, never needs it."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Optional[Console] = None

    @property
    def file(self) -> Any:
        """The stream it writes to (JSON goes straight there, without making the console)."""
        if self._console is not None:
            return self._console.file
        return sys.stderr if self._stderr else sys.stdout

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            # Off a terminal (pipes, CI logs) rich would wrap tables at 80 columns; give them room.
            if self._stderr:
                self._console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)
            else:
                self._console = Console(width=None if sys.stdout.isatty() else 120)
        return getattr(self._console, name)


def escape(text: str) -> str:
    """rich's escape of console markup (``[``), importing it at the first use."""
    from rich.markup import escape as markup_escape

    return markup_escape(text)


out = cast("Console", _Console(stderr=False))
err = cast("Console", _Console(stderr=True))


class UsageError(Exception):
    """A malformed command-line argument (exit code 2)."""


def exit_interrupted() -> NoReturn:
    """Ctrl-C: one line on stderr and exit code 130, never a traceback."""
    err.print("interrupted")
    sys.exit(130)


F = TypeVar("F", bound=Callable[..., Any])


def ctrl_c_exits_130(command: F) -> F:
    """Wraps a command so that Ctrl-C anywhere in it ends with :func:`exit_interrupted` (the
    command-line framework would otherwise print its own "Aborted!" and exit with 1)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            exit_interrupted()

    return wrapper  # type: ignore[return-value]


def check_plot(path: Optional[str], flag: str = "--plot", force: bool = False) -> None:
    """A figure to write: a .png or .svg file, as :func:`check_out` checks it."""
    if path and not path.lower().endswith((".png", ".svg")):
        raise UsageError(f"{flag} {path!r}: write a .png or .svg file")
    check_out(path, flag, force)


def check_out(path: Optional[str], flag: str, force: bool = False) -> None:
    """A file to write must go to a directory that exists, and replaces a file only with
    ``--force`` (an exit-2 error naming it, before any work)."""
    if not path:
        return
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UsageError(f"{flag} {path}: its directory {os.path.dirname(os.path.abspath(path))} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory")
    if os.path.lexists(path) and not force:
        raise UsageError(f"{flag} {path}: exists (give --force to replace it)")


def check_out_dir(path: Optional[str], flag: str, files: tuple[str, ...], force: bool = False) -> None:
    """A directory to write ``files`` into (created if missing): files of an earlier run are
    replaced only with ``--force``."""
    if not path:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path}: exists and is not a directory")
    there = [f for f in files if os.path.lexists(os.path.join(path, f))]
    if there and not force:
        raise UsageError(f"{flag} {path}: holds {', '.join(there)} from an earlier run (give --force to replace them)")


FORCE_HELP = "Replace output files that exist (without it, an existing output is an error)."


def pairs(items: list[str], option: str, prefix: str = "") -> list[tuple[str, str]]:
    """``KEY=VALUE`` arguments as pairs, each key given ``prefix`` unless it has it."""
    found = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} {item!r}: expected KEY=VALUE")
        key = key.strip()
        if prefix and not key.startswith(prefix):
            key = prefix + key
        found.append((key, value.strip()))
    return found


def _fio_size(option: str, key: str, value: str, text: str) -> str:
    """A size in fio's units (`kb_base=1024`: `4k`, `4kB` and `4KiB` are 4096) as exact bytes."""
    try:
        return f"{_core.parse_size(text.strip(), True)}B"
    except (ValueError, SsdlabError) as e:
        raise UsageError(f"{option} {key.removeprefix('workload.')}={value}: {e.args[0] if e.args else e}") from None


def fio_values(settings: list[tuple[str, str]], option: str = "-w") -> list[tuple[str, str]]:
    """`-w` values read as fio reads them, as a job file's are: sizes in fio's units (`bs=4kB`
    is 4096 B, as in a job file, where a config's `4kB` is 4000 B), and `rw=read:28k` (skip
    28 KiB after each I/O; `-8k` steps back) as `rw` and `rw_skip`."""
    found = []
    for key, value in settings:
        if key in ("workload.bs", "workload.size", "workload.offset"):
            found.append((key, ",".join(_fio_size(option, key, value, part) for part in value.split(","))))
            continue
        if key == "workload.bssplit":
            lists = [
                ":".join(f"{_fio_size(option, key, value, size)}/{pct}" for size, _, pct in (item.partition("/") for item in part.split(":") if item.strip()))
                for part in value.split(",")
            ]
            found.append((key, ",".join(lists)))
            continue
        rw, sep, modifier = value.partition(":")
        if key != "workload.rw" or not sep:
            found.append((key, value))
            continue
        if rw.strip().lower().startswith("rand"):
            raise UsageError(f"{option} rw={value}: a skip applies to sequential jobs (read, write, rw)")
        m = modifier.strip()
        skip = int(_fio_size(option, key, value, m.lstrip("+-"))[:-1])
        found += [(key, rw.strip()), ("workload.rw_skip", str(-skip if m.startswith("-") else skip))]
    return found


P = TypeVar("P", bound="_Progress")


class _Progress:
    """Progress on stderr, shown only on a terminal and only once a pass takes more than 1 s;
    a context manager that clears it at the end (or on an error or Ctrl-C)."""

    total: Optional[float] = None

    def __init__(self, label: str) -> None:
        self.label = label
        self.start = time.monotonic()
        # Whether stderr is a terminal is asked once a pass has taken 1 s, not before: a
        # short command never makes the console.
        self.enabled = True
        self.progress: Optional[Progress] = None
        self.task: Any = None

    def columns(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def update(self, completed: float) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            if time.monotonic() - self.start < 1.0:
                return
            if not err.is_terminal:
                self.enabled = False
                return
            from rich.progress import Progress, TextColumn

            self.progress = Progress(TextColumn("{task.description}"), *self.columns(), console=err, transient=True)
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=self.total)
        self.progress.update(self.task, completed=completed)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def __enter__(self: P) -> P:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Bar(_Progress):
    """A bar for passes of known length: ``bar(fraction)``."""

    total = 1.0

    def columns(self) -> tuple[Any, ...]:
        from rich.progress import BarColumn, TaskProgressColumn, TimeRemainingColumn

        return BarColumn(), TaskProgressColumn(), TimeRemainingColumn()

    def __call__(self, fraction: float) -> None:
        self.update(min(max(fraction, 0.0), 1.0))


class Count(_Progress):
    """A running count of records for passes of unknown length: ``count(records)``."""

    def columns(self) -> tuple[Any, ...]:
        from rich.progress import TextColumn

        return (TextColumn("{task.completed:,.0f} records"),)

    def __call__(self, records: int) -> None:
        self.update(records)
