"""``python3 dev.py bench --against REV``: every bench scenario of HEAD beside the same scenario
built from REV, run alternately in fresh processes, CPU seconds of each run, and the ratio
HEAD / REV per scenario (median and spread over the rounds). ``--record`` appends HEAD's
``ssdlab bench --json`` rows to ``bench/history.jsonl`` (one line per landing).

REV is checked out in a git worktree under ``target/against/`` and its native module built with
cargo there (its own target directory: HEAD's build is not touched), profile-guided as HEAD's
is when the toolchain allows (``tools/pgo.py``), so that the two differ in code alone. Where REV
can only be built plain (no profile, or its guided build failed), HEAD is built plain beside it
(``target/against/head-plain``) rather than compared guided; the table's heading says which.
Both modules are loaded straight from their shared objects, so REV's Python code plays no part.
Scenarios that only one side has are listed, not compared. A scenario whose rounds' ratios
spread wider than 1.5x (largest over smallest) runs ``--settle`` more rounds (4 unless told)
before its median counts, and the table then says how many rounds each row had.

``--instructions`` also counts the instructions each side executes in the scenario (the same
span the CPU seconds time), once per side, under valgrind's callgrind: a count that does not
move with the machine's load, for a machine too noisy for CPU seconds to show a few per cent
(valgrind runs about 50 times slower; ``apt-get install valgrind``). ``--instructions run``
counts only the event loop's calls (``Simulation::run_events``, which HEAD and a887a70 both
have): a simulated scenario's timed run without its set-up and ageing, which are most of an
aged scenario's count. A stream scenario (the ATC and trace rows) has no event loop and is
counted whole; a side whose build has no function of that name to count shows no ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pgo

ROOT = Path(__file__).resolve().parent.parent
HISTORY = ROOT / "bench" / "history.jsonl"

# Runs in a fresh process: loads a native module from its file, runs one scenario, prints its
# row with the CPU seconds the scenario took.
CHILD = """
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("_core", sys.argv[1])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
if sys.argv[2] == "--list":
    print(json.dumps(list(core.bench_scenarios())))
else:
    t0 = time.process_time()
    row = json.loads(core.bench_run(sys.argv[2], float(sys.argv[3])))
    row["cpu_s"] = time.process_time() - t0
    print(json.dumps(row))
"""


def say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def head_module() -> Path:
    found = sorted((ROOT / "python" / "ssdlab").glob("_core*.so"))
    if not found:
        sys.exit("[bench] no native module in python/ssdlab: run python3 dev.py setup")
    return found[0]


def cargo_module(tree: Path, target: Path, flags: Optional[list[str]]) -> Optional[Path]:
    """The native module of checkout ``tree`` built into ``target``, with exactly ``flags`` (the
    config's own with ``None``); ``None`` when cargo fails or leaves no module."""
    env = pgo.encoded(flags) if flags is not None else None
    done = subprocess.run(["cargo", "build", "--release", "--locked", "-p", "ssdlab-py", "--target-dir", str(target)], cwd=tree, env=env)
    lib = pgo.module_file(target)
    return lib if done.returncode == 0 and lib.exists() else None


def build(rev: str) -> tuple[Path, bool]:
    """REV's native module, built in a worktree of its own (reused when it is there), and
    whether it is profile-guided. A guided build that fails is built again plain."""
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    tree = ROOT / "target" / "against" / sha[:12]
    if not tree.exists():
        say(f"checking out {sha[:12]} in {tree}")
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=ROOT, check=True, capture_output=True)
    target = ROOT / "target" / "against" / f"{sha[:12]}-build"
    flags = pgo.profile(tree, ROOT / "target" / "against" / f"{sha[:12]}-pgo", say)
    say(f"building {sha[:12]}'s native module (cargo build --release -p ssdlab-py{', with its profile' if flags else ''})")
    lib = cargo_module(tree, target, flags)
    if lib is None and flags is not None:
        say(f"{sha[:12]}'s profile-guided build failed: building it plain")
        flags = None
        lib = cargo_module(tree, target, None)
    if lib is None:
        sys.exit(f"[bench] {sha[:12]}'s native module did not build (cargo's messages are above)")
    return lib, flags is not None


def plain_head() -> Path:
    """HEAD's module built plain in a target directory of its own, to stand beside a REV that
    could not be built profile-guided (a guided HEAD would then be compared with a plain REV)."""
    say("REV is a plain build: building HEAD plain beside it (cargo build --release -p ssdlab-py), so that the two differ in code alone")
    lib = cargo_module(ROOT, ROOT / "target" / "against" / "head-plain", None)
    if lib is None:
        sys.exit("[bench] HEAD's plain native module did not build (cargo's messages are above)")
    return lib


def child(module: Path, *args: str) -> object:
    out = subprocess.run([sys.executable, "-c", CHILD, str(module), *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


# What `--instructions` counts: the functions whose calls callgrind counts inside.
SPANS = {"scenario": "*__pyfunction_bench_run*", "run": "*Simulation::run_events*"}


def callgrind(module: Path, name: str, scale: float, function: str) -> int:
    """Instructions executed inside calls of ``function`` (a callgrind pattern) while the
    scenario runs."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--collect-atstart=no", f"--toggle-collect={function}",
           sys.executable, "-c", CHILD, str(module), name, str(scale)]
    err = subprocess.run(cmd, check=True, capture_output=True, text=True).stderr
    found = re.search(r"Collected : (\d+)", err)
    if not found:
        sys.exit(f"[bench] callgrind printed no count for {name}:\n{err[-2000:]}")
    return int(found.group(1))


def instructions(module: Path, name: str, scale: float, span: str = "scenario", stream: bool = False) -> Optional[int]:
    """Instructions the scenario executes inside ``bench_run`` (``span`` "scenario": as the CPU
    seconds time it) or inside the event loop alone ("run"; a ``stream`` scenario, which has no
    event loop, whole). None where the event loop counted nothing: a build whose loop is not a
    function of that name."""
    if span == "run" and not stream:
        n = callgrind(module, name, scale, SPANS["run"])
        return n if n > 0 else None
    return callgrind(module, name, scale, SPANS["scenario"])


# A scenario whose rounds' ratios spread wider than this (largest over smallest) runs more
# rounds before its median counts: on a VM one round can take several times another's CPU
# (the kernel's time to back a large file's pages swings with the host), and three rounds
# cannot outvote one such round.
UNSETTLED = 1.5


def round_ratios(sides: dict[str, list[float]]) -> list[float]:
    """A scenario's CPU seconds HEAD / REV, round by round (rounds where REV took none left out)."""
    return [h / b for h, b in zip(sides["head"], sides["rev"]) if b > 0]


def unsettled(cpu: dict[str, dict[str, list[float]]]) -> list[str]:
    """The scenarios whose per-round ratios HEAD / REV spread wider than ``UNSETTLED``."""
    out = []
    for n, sides in cpu.items():
        ratios = round_ratios(sides)
        if ratios and min(ratios) > 0 and max(ratios) / min(ratios) > UNSETTLED:
            out.append(n)
    return out


def against(rev: str, rounds: int, scale: float, only: list[str], count: Optional[str] = None, skip: tuple[str, ...] = (), settle: int = 4) -> int:
    base, guided = build(rev)
    head = head_module() if guided else plain_head()
    ours, theirs = child(head, "--list"), child(base, "--list")
    assert isinstance(ours, list) and isinstance(theirs, list)
    names = [n for n in ours if n in theirs and (not only or any(o in n for o in only)) and not any(k in n for k in skip)]
    for n in sorted(set(ours) ^ set(theirs)):
        say(f"{n}: only in {'HEAD' if n in ours else rev}, not compared")
    cpu: dict[str, dict[str, list[float]]] = {n: {"head": [], "rev": []} for n in names}
    events: dict[str, dict[str, int]] = {n: {} for n in names}

    def one_round(r: int, which: list[str]) -> None:
        for n in which:
            # Alternate which side goes first, so a drift in the machine's speed falls on both.
            order = [("head", head), ("rev", base)] if r % 2 == 0 else [("rev", base), ("head", head)]
            for side, module in order:
                row = child(module, n, str(scale))
                assert isinstance(row, dict)
                cpu[n][side].append(float(row["cpu_s"]))
                events[n][side] = int(row.get("events", 0))

    for r in range(rounds):
        one_round(r, names)
        say(f"round {r + 1} of {rounds} done")
    # Scenarios whose rounds disagree run `settle` rounds more, alternating on.
    extra = unsettled(cpu) if settle > 0 else []
    if extra:
        say(f"{len(extra)} scenario(s) spread wider than {UNSETTLED}x between rounds: {settle} more rounds of {', '.join(extra)}")
        for r in range(rounds, rounds + settle):
            one_round(r, extra)
    instr: dict[str, dict[str, Optional[int]]] = {n: {} for n in names}
    if count:
        for i, n in enumerate(names):
            # A scenario with no events is a stream's (ATC, trace): it has no event loop.
            stream = not events[n].get("head")
            for side, module in [("head", head), ("rev", base)]:
                instr[n][side] = instructions(module, n, scale, count, stream)
            say(f"instructions counted: {i + 1} of {len(names)} scenarios")
    builds = "both profile-guided" if guided else "both plain builds"
    print(f"HEAD {git('rev-parse', '--short', 'HEAD')} against {rev} ({builds}): CPU seconds per scenario, {rounds} round{'s' if rounds != 1 else ''}, scale {scale}")
    # Events per run, HEAD over REV: 1.00 when the model did the same work; otherwise the
    # scenario's model changed and the time ratio mixes speed with the change.
    label = "run instr." if count == "run" else "instructions"
    print(f"{'scenario':<34} {'HEAD s':>8} {rev + ' s':>12} {'ratio':>7} {'spread':>13} {'events':>7}" + (f" {label:>13}" if count else "") + (f" {'rounds':>7}" if extra else ""))
    worst = 0.0
    for n in names:
        ratios = round_ratios(cpu[n])
        med = statistics.median(ratios) if ratios else float("nan")
        worst = max(worst, med)
        ev = f"{events[n]['head'] / events[n]['rev']:>6.2f}x" if events[n].get("rev") else f"{'-':>7}"
        h, b = instr[n].get("head"), instr[n].get("rev")
        ins = (f" {h / b:>12.4f}x" if h and b else f" {'-':>13}") if count else ""
        more = f" {len(ratios):>7}" if extra else ""
        print(f"{n:<34} {statistics.median(cpu[n]['head']):>8.3f} {statistics.median(cpu[n]['rev']):>12.3f} {med:>6.2f}x {min(ratios):>6.2f}-{max(ratios):.2f} {ev}{ins}{more}")
    print(f"slowest ratio: {worst:.2f}x (below 1.0: HEAD is faster)")
    return 0


def machine() -> str:
    """The machine, as a history row names it: architecture, cores and (where Linux says) the
    processor's model, since machines of the same size differ in speed."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return ", ".join(x for x in (platform.machine(), f"{os.cpu_count()} cores", model) if x)


def record(scale: float) -> int:
    head = head_module()
    names = child(head, "--list")
    assert isinstance(names, list)
    rows = [child(head, n, str(scale)) for n in names]
    entry = {"commit": git("rev-parse", "HEAD"), "date": time.strftime("%Y-%m-%d"), "machine": machine(),
             "scale": scale, "rows": rows}
    HISTORY.parent.mkdir(exist_ok=True)
    with open(HISTORY, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, separators=(",", ":")) + "\n")
    say(f"appended {len(rows)} scenarios of {entry['commit'][:12]} to {HISTORY.relative_to(ROOT)}")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="dev.py bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--against", metavar="REV", help="compare HEAD with this git revision")
    p.add_argument("--record", action="store_true", help="append HEAD's rows to bench/history.jsonl")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    p.add_argument("--scale", type=float, default=0.3, help="each scenario's I/O count times this (default 0.3)")
    p.add_argument("--only", action="append", default=[], help="scenarios whose name holds this (repeatable)")
    p.add_argument("--skip", action="append", default=[], help="leave out scenarios whose name holds this (repeatable)")
    p.add_argument("--settle", type=int, default=4, help=f"more rounds for scenarios whose rounds' ratios spread wider than {UNSETTLED}x (default 4; 0: none)")
    p.add_argument("--instructions", nargs="?", const="scenario", choices=sorted(SPANS), metavar="SPAN",
                   help="also count each side's instructions per scenario under valgrind (deterministic, about 50x slower): "
                   "the whole scenario, or with 'run' the event loop alone (no set-up or ageing)")
    a = p.parse_args(argv)
    if a.instructions and not shutil.which("valgrind"):
        p.error("--instructions needs valgrind (apt-get install valgrind)")
    if a.rounds < 1 or a.settle < 0 or not 0 < a.scale <= 10:
        p.error("--rounds is at least 1, --settle at least 0 and --scale in (0, 10]")
    if a.record:
        return record(a.scale)
    if a.against:
        return against(a.against, a.rounds, a.scale, a.only, a.instructions, tuple(a.skip), a.settle)
    p.error("give --against REV or --record")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
