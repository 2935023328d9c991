import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
