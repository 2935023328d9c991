import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: The data beside the repository that some tests read in place: traces, fio's example job
#: files, the seed texts. ``SSDLAB_SHARED`` puts it elsewhere (or, set to a path that does not
#: exist, tests what happens without it).
SHARED = Path(os.environ.get("SSDLAB_SHARED") or ROOT.parent / "shared")
#: CI sets ``SSDLAB_REQUIRE_SHARED=1``: a test that needs ../shared then fails without it.
REQUIRE_SHARED = os.environ.get("SSDLAB_REQUIRE_SHARED") == "1"
MISSING = "../shared is missing"

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


def need_shared(*parts: str) -> Path:
    """``SHARED/parts`` for a test that reads it. When it is missing the test fails under
    ``SSDLAB_REQUIRE_SHARED=1`` (CI), and is skipped otherwise; the skips are counted at the end
    of the session (:func:`pytest_terminal_summary`), never silent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        if REQUIRE_SHARED:
            pytest.fail(f"{MISSING}: no {path}, and SSDLAB_REQUIRE_SHARED=1 requires it", pytrace=False)
        pytest.skip(f"{MISSING}: no {path}")
    return path


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "shared(path): the test reads ../shared/PATH (see need_shared in tests/conftest.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """``@pytest.mark.shared("data/traces")``: :func:`need_shared` before the test runs (in the
    call, so that a missing path under SSDLAB_REQUIRE_SHARED=1 is a failure, not an error)."""
    for mark in item.iter_markers("shared"):
        need_shared(*mark.args)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One loud line for the tests skipped for want of ../shared."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if MISSING in str(r.longrepr)]
    if skipped:
        n = len(skipped)
        terminalreporter.write_sep(
            "!", f"{n} test{'s' if n != 1 else ''} skipped: {MISSING} ({SHARED}); CI requires it (SSDLAB_REQUIRE_SHARED=1 fails them)", red=True, bold=True
        )
