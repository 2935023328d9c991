"""The shipped type stub matches the native module."""

import subprocess
import sys

from conftest import ROOT


def test_stubtest_accepts_the_stub():
    p = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "ssdlab._core", "--allowlist", str(ROOT / "tests" / "stubtest-allowlist.txt")],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert p.returncode == 0, p.stdout + p.stderr
