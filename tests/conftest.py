import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A shell without job control starts background commands with SIGINT ignored, and an ignored
# signal stays ignored across exec: the Ctrl-C tests' children would never see theirs. Handled
# (as Python's default is), it is reset to the default in every child.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def ssdlab_cli(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs the CLI as a user would, in a fresh process."""
    e = dict(os.environ)
    e.pop("SSDLAB_DEBUG", None)
    if env:
        e.update(env)
    return subprocess.run(
        [sys.executable, "-m", "ssdlab", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=e
    )


@pytest.fixture
def cli():
    return ssdlab_cli
