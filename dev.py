#!/usr/bin/env python3
"""Everyday commands for ssdlab, needing only python3, pip and cargo.

    python3 dev.py run [ARGS...]   set up, then `ssdlab run ARGS` (the embedded default if none)
    python3 dev.py test            set up, then the lints, then every test: cargo test (and the
                                   census feature's own tests) and pytest
    python3 dev.py lint            set up, then cargo fmt --check, cargo clippy (-D warnings; again
                                   with the core's census feature), cargo doc (private items too,
                                   -D warnings), ruff and mypy, in that order, stopping at the
                                   first that fails
    python3 dev.py bench [ARGS...] set up, then `ssdlab bench ARGS`; with --against REV, every
                                   scenario beside REV's build, alternating, CPU time, ratio per
                                   scenario; with --record, HEAD's rows into bench/history.jsonl
                                   (tools/bench_against.py)
    python3 dev.py docs            set up, then build the documentation site into site/
    python3 dev.py setup           create .venv and build the native module (when sources changed)
    python3 dev.py help            this text

Setup installs fio and chromium where it can (Debian's packages, as root: the real-device probe
and the headless check of HTML reports), makes a virtual environment in .venv (falling back to pip's --python option where the
venv module has no pip), installs ssdlab in editable mode with its test extras (pytest, and the
linters ruff and mypy; pip builds the Rust extension with maturin), and records a hash of the
Rust sources, presets and pyproject.toml so that the next call rebuilds only when they changed.
The native module is built profile-guided where the toolchain has llvm-profdata (rustup's
llvm-tools component, added when missing): an instrumented build runs every bench scenario
briefly first (tools/pgo.py; SSDLAB_PGO=0 builds without). Results are the same either way.
The lints also need cargo's rustfmt and clippy (rustup component add rustfmt clippy).

Docs installs the `docs` extra of pyproject.toml (mkdocs, mkdocs-material, mkdocstrings) into
.venv, writes docs/configuration.md from the core's config types (docs/gen_config_reference.py),
and runs `mkdocs build --strict` (mkdocs.yml): a broken link or a missing page fails it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tools"))
import pgo  # noqa: E402  (tools/pgo.py: the profile-guided build)

VENV = ROOT / ".venv"
STAMP = ROOT / ".dev-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def say(msg: str) -> None:
    print(f"[dev] {msg}", file=sys.stderr, flush=True)


def sh(*cmd: object, **kw: object) -> None:
    argv = [str(c) for c in cmd]
    say("$ " + " ".join(argv))
    r = subprocess.run(argv, cwd=ROOT, **kw)  # type: ignore[call-overload]
    if r.returncode != 0:
        sys.exit(r.returncode)


def sources_hash() -> str:
    h = hashlib.sha256()
    h.update(f"pgo={pgo.enabled()}".encode())
    files = [ROOT / "Cargo.toml", ROOT / "Cargo.lock", ROOT / "pyproject.toml", ROOT / ".cargo" / "config.toml", ROOT / "tools" / "pgo.py"]
    for pattern in ("crates/**/*.rs", "crates/**/Cargo.toml", "presets/*.toml"):
        files += sorted(ROOT.glob(pattern))
    for f in files:
        if f.exists():
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def make_venv() -> None:
    if PY.exists():
        return
    say("creating .venv")
    r = subprocess.run([sys.executable, "-m", "venv", str(VENV)], cwd=ROOT)
    if r.returncode != 0 or not PY.exists():
        # Some distributions ship python3 without ensurepip: make a bare venv and let the
        # system pip install into it.
        shutil.rmtree(VENV, ignore_errors=True)
        sh(sys.executable, "-m", "venv", "--without-pip", VENV)
    if subprocess.run([str(PY), "-m", "pip", "--version"], capture_output=True).returncode != 0:
        sh(sys.executable, "-m", "pip", "--python", PY, "install", "pip")


def ensure_tool(command: str, package: str, why: str, present: Optional[Callable[[], bool]] = None) -> None:
    """Install Debian's `package` for `command` when it is missing (or `present()` says so)
    and we may (root, apt-get present); otherwise say how, and go on: only `why` needs it (its
    tests skip, saying so)."""
    here = present or (lambda: shutil.which(command) is not None)
    if here():
        return
    if os.name == "posix" and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        say(f"installing {package} (apt-get install {package}) for {why}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        ok = subprocess.run(["apt-get", "install", "-y", "-q", package], env=env, capture_output=True).returncode == 0
        if not ok:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
            ok = subprocess.run(["apt-get", "install", "-y", "-q", package], env=env, capture_output=True).returncode == 0
        if ok and here():
            return
    say(f"{command} is not installed: {why} needs it (Debian/Ubuntu: apt-get install {package})")


def nbdkit_python() -> bool:
    """Whether nbdkit has its Python plugin (Debian's nbdkit-plugin-python)."""
    return shutil.which("nbdkit") is not None and subprocess.run(["nbdkit", "python", "--version"], capture_output=True).returncode == 0


def setup(force: bool = False) -> None:
    ensure_tool("fio", "fio", "`ssdlab probe fio:PATH` and the tests that check ssdlab's fio output against real fio")
    ensure_tool("chromium", "chromium", "the test that renders `ssdlab report` in a headless browser")
    serve = "`ssdlab serve` (the simulated drive over NBD) and its tests"
    ensure_tool("nbdkit", "nbdkit", serve)
    ensure_tool("nbdkit", "nbdkit-plugin-python", serve, present=nbdkit_python)
    ensure_tool("nbdsh", "python3-libnbd", "the `ssdlab serve` tests (nbdsh, a client)")
    ensure_tool("qemu-io", "qemu-utils", "the `ssdlab serve` tests (qemu-io, a client)")
    make_venv()
    install(force)
    precompile()


def install(force: bool) -> None:
    """Installs ssdlab (editable) and builds its native module, unless the sources are as
    at the last build and the module imports."""
    digest = sources_hash()
    if not force and STAMP.exists() and STAMP.read_text().strip() == digest and (ROOT / "python/ssdlab").exists():
        probe = subprocess.run([str(PY), "-c", "import ssdlab._core"], cwd=ROOT, capture_output=True)
        if probe.returncode == 0:
            return
    say("installing ssdlab (editable) and building the native module; the first build takes several minutes")
    cmd = [PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", ".[test]"]
    # Profile-guided where the toolchain allows (tools/pgo.py): an instrumented module is built
    # and trained first, and a build that fails with its profile is done again without.
    flags = pgo.profile(ROOT, ROOT / "target" / "pgo", say)
    if flags is not None:
        say("$ " + " ".join(map(str, cmd)) + "  (with the profile)")
        if subprocess.run([str(c) for c in cmd], cwd=ROOT, env=pgo.encoded(flags)).returncode == 0:
            STAMP.write_text(digest + "\n")
            return
        say("the build with the profile failed: building without it")
    sh(*cmd)
    STAMP.write_text(digest + "\n")


def precompile() -> None:
    """Writes the bytecode of ssdlab's own modules. pip compiles the packages it installs, but
    an editable install leaves the project's modules to their first import, and where
    PYTHONDONTWRITEBYTECODE is set (as on this project's machines) no import writes them: every
    `ssdlab` command then compiled some 30 modules from source, about 65 ms of each start.
    compileall skips modules whose bytecode is current; one edited later is compiled in memory
    at import, as Python always does. A module that does not compile is left to its import
    (and the tests) to report."""
    subprocess.run([str(PY), "-m", "compileall", "-q", str(ROOT / "python" / "ssdlab")], cwd=ROOT, capture_output=True)


def lint() -> None:
    """The lints CI runs (through `test`), in order; the first that fails ends dev.py with its
    exit code. ruff and mypy are the venv's (the test extra), configured in pyproject.toml."""
    sh("cargo", "fmt", "--all", "--", "--check")
    sh("cargo", "clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings")
    # The event loop's census, for speed work, is compiled only with its feature.
    sh("cargo", "clippy", "-p", "ssdlab-core", "--features", "census", "--all-targets", "--locked", "--", "-D", "warnings")
    # The API docs, private items included: a broken intra-doc link fails.
    env = dict(os.environ, RUSTDOCFLAGS="-D warnings")
    sh("cargo", "doc", "--workspace", "--no-deps", "--document-private-items", "--locked", env=env)
    sh(PY, "-m", "ruff", "check", "python", "tests", "tools", "dev.py")
    sh(PY, "-m", "mypy", "python/ssdlab")


def extra(name: str) -> list[str]:
    """The requirements of pyproject.toml's optional-dependency group `name` (read by the venv's
    Python, which has tomllib or, before 3.11, ssdlab's tomli)."""
    code = (
        "import json, sys\n"
        "try:\n    import tomllib\nexcept ImportError:\n    import tomli as tomllib\n"
        "with open(sys.argv[1], 'rb') as f:\n"
        "    print(json.dumps(tomllib.load(f)['project']['optional-dependencies'][sys.argv[2]]))\n"
    )
    out = subprocess.run([str(PY), "-c", code, str(ROOT / "pyproject.toml"), name], capture_output=True, text=True)
    if out.returncode != 0:
        say(f"cannot read the {name!r} extra of pyproject.toml: {out.stderr.strip()}")
        sys.exit(1)
    return list(json.loads(out.stdout))


def docs(rest: list[str]) -> None:
    setup()
    # The extra's packages alone: `pip install -e .[docs]` would rebuild the native module.
    sh(PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", *extra("docs"))
    sh(PY, ROOT / "docs" / "gen_config_reference.py", "-o", ROOT / "docs" / "configuration.md")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's notice about MkDocs 2.0 (not a build warning)
    sh(PY, "-m", "mkdocs", "build", "--strict", "--site-dir", ROOT / "site", *rest, env=env)
    say(f"built {ROOT / 'site' / 'index.html'}")


def main(argv: list[str]) -> None:
    cmd = argv[0] if argv else "help"
    rest = argv[1:]
    if cmd in ("help", "-h", "--help"):
        print(__doc__)
        return
    if cmd == "setup":
        setup(force="--force" in rest)
        return
    if cmd == "run":
        setup()
        sh(BIN / "ssdlab", "run", *rest)
        return
    if cmd == "bench":
        setup()
        if "--against" in rest or "--record" in rest:
            sh(PY, ROOT / "tools" / "bench_against.py", *rest)
        else:
            sh(BIN / "ssdlab", "bench", *rest)
        return
    if cmd == "lint":
        setup()
        lint()
        return
    if cmd == "docs":
        docs(rest)
        return
    if cmd == "test":
        setup()
        lint()
        sh("cargo", "test", "--locked", "-p", "ssdlab-core")
        sh("cargo", "test", "--locked", "-p", "ssdlab-core", "--features", "census", "--lib", "--", "census", "place_of")
        sh(PY, "-m", "pytest", *rest)
        return
    print(f"unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
