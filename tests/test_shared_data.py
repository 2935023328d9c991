"""Tests that read ../shared say so when it is missing: each is skipped and the session ends
with a count of them, or, under SSDLAB_REQUIRE_SHARED=1 (CI), each fails."""

import os
import subprocess
import sys

from conftest import MISSING, ROOT

# A test that needs ../shared/seeds and nothing else.
NEEDS_SHARED = "tests/test_reproduce.py::test_every_quote_is_in_the_seed_at_its_line"


def pytest_without_shared(tmp_path, **env):
    e = {k: v for k, v in os.environ.items() if k != "SSDLAB_REQUIRE_SHARED"}
    e.update(SSDLAB_SHARED=str(tmp_path / "no-shared"), **env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", NEEDS_SHARED], cwd=ROOT, env=e, capture_output=True, text=True, timeout=300
    )


def test_without_shared_its_tests_are_skipped_and_counted_at_the_end(tmp_path):
    p = pytest_without_shared(tmp_path)
    assert p.returncode == 0 and "1 skipped" in p.stdout, p.stdout + p.stderr
    assert f"1 test skipped: {MISSING} ({tmp_path / 'no-shared'}); CI requires it" in p.stdout, p.stdout


def test_ci_fails_the_tests_that_need_shared_when_it_is_missing(tmp_path):
    p = pytest_without_shared(tmp_path, SSDLAB_REQUIRE_SHARED="1")
    assert p.returncode == 1 and "1 failed" in p.stdout, p.stdout + p.stderr
    assert f"{MISSING}: no {tmp_path / 'no-shared' / 'seeds'}, and SSDLAB_REQUIRE_SHARED=1 requires it" in p.stdout, p.stdout
