"""Profile-guided builds of the native module.

The simulator's hot path is an event loop that calls into every block's module: its profile is
flat, and much of its cost is branches and calls that the compiler lays out blind. A profile of
real runs tells it which paths are hot (measured: 8-18 % fewer instructions per simulated I/O,
the same results bit for bit, since profile-guided optimisation changes no arithmetic).

``profile(tree, work)`` builds an instrumented copy of the module of the checkout ``tree`` into
``work``, runs every bench scenario on it at a small scale (about 15 s), merges what it recorded
with the toolchain's own ``llvm-profdata`` (rustup's ``llvm-tools`` component, added when rustup
is there and it is missing), and returns the rustflags of the final build. It returns ``None``,
having said why, when it cannot: no ``llvm-profdata`` of this toolchain (a profile written by
another LLVM version is refused), ``SSDLAB_PGO=0`` in the environment, or a step that failed.
The caller then builds as usual: a plain build is only slower.

Flags set through the environment replace those of ``.cargo/config.toml``, so the final flags
are the config's flags for this host (read from ``tree``'s own config) plus the profile's.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional

# Every scenario of the module at ``scale``, loaded straight from its file.
TRAIN = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_core", sys.argv[1])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
for name in core.bench_scenarios():
    core.bench_run(name, float(sys.argv[2]))
"""

# The scale of the training runs: each scenario's I/Os times this.
SCALE = 0.2


def enabled() -> bool:
    """Whether profile-guided builds are wanted (``SSDLAB_PGO=0`` turns them off)."""
    return os.environ.get("SSDLAB_PGO", "1") != "0"


def _rustc(*args: str) -> str:
    return subprocess.run(["rustc", *args], check=True, capture_output=True, text=True).stdout


def host() -> str:
    return next(line.split(":", 1)[1].strip() for line in _rustc("-vV").splitlines() if line.startswith("host:"))


def profdata(say: Callable[[str], None]) -> Optional[Path]:
    """This toolchain's ``llvm-profdata``, adding rustup's ``llvm-tools`` component if needed."""
    tool = Path(_rustc("--print", "sysroot").strip()) / "lib" / "rustlib" / host() / "bin" / "llvm-profdata"
    if not tool.exists() and shutil.which("rustup"):
        say("adding rustup's llvm-tools component (llvm-profdata, for the profile-guided build)")
        subprocess.run(["rustup", "component", "add", "llvm-tools"], capture_output=True)
    return tool if tool.exists() else None


def config_flags(tree: Path) -> Optional[list[str]]:
    """The rustflags ``tree``'s ``.cargo/config.toml`` gives this host (its target's, else its
    build's), which flags set through the environment would replace; ``None`` when this Python
    cannot read TOML (before 3.11, without tomli)."""
    cfg = tree / ".cargo" / "config.toml"
    if not cfg.exists():
        return []
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return None
    data = tomllib.loads(cfg.read_text(encoding="utf-8"))
    flags = data.get("target", {}).get(host(), {}).get("rustflags") or data.get("build", {}).get("rustflags") or []
    return [str(f) for f in (flags.split() if isinstance(flags, str) else flags)]


def encoded(flags: list[str]) -> dict[str, str]:
    """An environment that builds with exactly ``flags`` (paths with spaces survive)."""
    env = {k: v for k, v in os.environ.items() if k != "RUSTFLAGS"}
    env["CARGO_ENCODED_RUSTFLAGS"] = "\x1f".join(flags)
    return env


def module_file(target: Path) -> Path:
    return target / "release" / ("lib_core.dylib" if platform.system() == "Darwin" else "lib_core.so")


def profile(tree: Path, work: Path, say: Callable[[str], None]) -> Optional[list[str]]:
    """Trains an instrumented build of ``tree``'s module in ``work``; the final build's flags, or
    ``None`` (said why) for a plain build."""
    if not enabled():
        say("SSDLAB_PGO=0: a plain build, without a profile")
        return None
    tool = profdata(say)
    if tool is None:
        say("no llvm-profdata for this toolchain (rustup component add llvm-tools): a plain build, without a profile")
        return None
    base = config_flags(tree)
    if base is None:
        say("no TOML reader in this Python (3.11's tomllib, or tomli) for .cargo/config.toml: a plain build, without a profile")
        return None
    raw = work / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir(parents=True)
    say("profile-guided build: an instrumented module first (cargo build --release -p ssdlab-py)")
    gen = subprocess.run(["cargo", "build", "--release", "--locked", "-p", "ssdlab-py", "--target-dir", str(work / "target")],
                         cwd=tree, env=encoded([*base, f"-Cprofile-generate={raw}"]))
    lib = module_file(work / "target")
    if gen.returncode != 0 or not lib.exists():
        say("the instrumented build failed: a plain build, without a profile")
        return None
    say(f"profile-guided build: every bench scenario at scale {SCALE} on the instrumented module")
    if subprocess.run([sys.executable, "-c", TRAIN, str(lib), str(SCALE)], cwd=tree).returncode != 0:
        say("the training runs failed: a plain build, without a profile")
        return None
    merged = work / "merged.profdata"
    runs = sorted(raw.glob("*.profraw"))
    if not runs or subprocess.run([str(tool), "merge", "-o", str(merged), *map(str, runs)], capture_output=True).returncode != 0:
        say("no profile could be merged: a plain build, without a profile")
        return None
    return [*base, f"-Cprofile-use={merged}"]
