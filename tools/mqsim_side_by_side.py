"""MQSim and ssdlab side by side on MQSim's stock drive: 4 KiB random reads at QD32, whole
processes run alternately, CPU seconds (user + system) and peak RSS of each (issue 30, item 6).

    python3 tools/mqsim_side_by_side.py --mqsim ~/MQSim [--map dram|cmt] [--rounds 3] [--ios 1000000]

``--mqsim`` is a checkout of CMU-SAFARI/MQSim built with its own ``make`` (the binary ``MQSim``
in the checkout). Its configuration files are derived from the checkout's own stock ones, so that
nothing of MQSim is copied here and what was changed is written down in this file:
- the drive is ``ssdconfig.xml`` as it is, except that ``--map dram`` (the default) sets
  ``Ideal_Mapping_Table`` to true; ``--map cmt`` keeps its 2 MiB cached mapping table;
- the workload is the first flow of ``workload.xml``'s first scenario (a ``QUEUE_DEPTH`` flow
  over all the drive's channels, chips, dies and planes, 4 KiB requests aligned to 8 KiB), made
  a flow of 100 % random reads at 32 outstanding requests that stops after ``--ios`` requests.
  Its ``Stop_Time`` is set to 0: MQSim stops a flow at ``Stop_Time`` whenever it is not 0,
  whatever ``Total_Requests_To_Generate`` says, and the stock 10 s would run for ~2 M requests.
  It keeps the stock ``Working_Set_Percentage`` of 50: MQSim reads the first half of the
  logical space where ssdlab reads all of it. With the map in DRAM neither simulator does more
  per read for that; with the CMT, MQSim's smaller working set can only raise its hit rate,
  so its figure is if anything the faster for it.

ssdlab runs ``ssdlab run mqsim`` (``presets/mqsim.toml``, MQSim's geometry and timings) with
the host's software costs at zero, as MQSim has no host, and for ``--map cmt`` with
``--set ftl.map_cache=2MiB`` (the preset's CMT of single 9 B entries). Each run's count of
served requests is checked against ``--ios``, so that a run that stopped early is an error,
not a fast figure. Each run's figures go to standard error as it ends; standard output gets
only the table that `docs/speed-mqsim.md` keeps.

Each round also runs both programs with ``--startup-ios`` requests (1000 by default; 0 leaves
it out), in the same order: what a program spends to start, load its configuration and build
its drive (MQSim allocates its whole map; ssdlab starts Python and imports its CLI). The table
then gives each side's median of those and the ratio of the medians less them, the two
simulations alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent


class SideBySideError(Exception):
    """A setting, file or run this comparison cannot use: said in one line."""


def _set(elem: ET.Element, tag: str, value: str, where: str) -> None:
    child = elem.find(tag)
    if child is None:
        raise SideBySideError(f"{where}: no <{tag}> to set")
    child.text = value


def drive_config(stock: str, ideal_map: bool) -> str:
    """MQSim's stock ``ssdconfig.xml`` text with its map all in DRAM or not."""
    root = ET.fromstring(stock)
    params = root.find("Device_Parameter_Set")
    if params is None:
        raise SideBySideError("ssdconfig.xml: no <Device_Parameter_Set>")
    _set(params, "Ideal_Mapping_Table", "true" if ideal_map else "false", "ssdconfig.xml")
    return ET.tostring(root, encoding="unicode")


def workload_config(stock: str, ios: int, depth: int = 32) -> str:
    """The first flow of MQSim's stock ``workload.xml``, made ``ios`` random reads at ``depth``
    outstanding requests that stop by count alone."""
    root = ET.fromstring(stock)
    scenario = root.find("IO_Scenario")
    flow = None if scenario is None else scenario.find("IO_Flow_Parameter_Set_Synthetic")
    if scenario is None or flow is None:
        raise SideBySideError("workload.xml: no synthetic flow in a first <IO_Scenario>")
    where = "workload.xml's first flow"
    if (flow.findtext("Synthetic_Generator_Type") or "").strip() != "QUEUE_DEPTH":
        raise SideBySideError(f"{where}: not a QUEUE_DEPTH flow")
    for tag, value in (("Read_Percentage", "100"), ("Address_Distribution", "RANDOM_UNIFORM"),
                       ("Average_No_of_Reqs_in_Queue", str(depth)), ("Stop_Time", "0"),
                       ("Total_Requests_To_Generate", str(ios))):
        _set(flow, tag, value, where)
    out = ET.Element(root.tag)
    one = ET.SubElement(out, "IO_Scenario")
    one.append(flow)
    return ET.tostring(out, encoding="unicode")


def served(mqsim_stdout: str) -> int:
    """The requests MQSim reports serviced (summed over its flows)."""
    counts = re.findall(r"total requests serviced:\s*(\d+)", mqsim_stdout)
    if not counts:
        raise SideBySideError("MQSim printed no 'total requests serviced' line")
    return sum(int(c) for c in counts)


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, int, str]:
    """Runs ``cmd`` to its end: its CPU seconds (user + system), wall seconds, peak RSS in
    KiB, and standard output. A failed run is an error that shows the end of its output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        except OSError as e:
            raise SideBySideError(f"{cmd[0]}: cannot run it ({e.strerror or e})") from e
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        said = " ".join((errors.strip() or text.strip())[-400:].split())
        raise SideBySideError(f"{' '.join(cmd)} exited with {proc.returncode}: {said or 'nothing said'}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss, text


def ssdlab_command(ssdlab: list[str], ios: int, cmt: bool) -> list[str]:
    cmd = [*ssdlab, "run", "mqsim", "--set", "host.submit_cost=0us", "--set", "host.complete_cost=0us",
           "-w", f"number_ios={ios}", "-w", "rw=randread", "-w", "bs=4k", "-w", "iodepth=32", "--json"]
    return cmd + (["--set", "ftl.map_cache=2MiB"] if cmt else [])


def ssdlab_ios(stdout: str) -> int:
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError as e:
        raise SideBySideError(f"ssdlab printed no JSON document ({e})") from e
    ios = doc.get("ios") if isinstance(doc, dict) else None
    if not isinstance(ios, int):
        raise SideBySideError("ssdlab's JSON has no whole 'ios' count")
    return ios


def compare(mqsim: Path, ssdlab: list[str], rounds: int, ios: int, cmt: bool, say: Callable[[str], None] = print,
            startup_ios: int = 0) -> dict[str, list[tuple[float, float, int]]]:
    """``rounds`` alternating pairs of runs (MQSim first in odd rounds, ssdlab first in even
    ones); for each program, (CPU s, wall s, peak RSS KiB) per round. With ``startup_ios``, each
    round then runs the pair again with that many requests, in the same order, under the keys
    ``"MQSim start-up"`` and ``"ssdlab start-up"``."""
    binary = mqsim / "MQSim"
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise SideBySideError(f"{binary}: no MQSim binary that can run (build the checkout with its own make)")
    # Each round's runs: the measured pair, then the start-up pair.
    runs = [("", ios)] + ([(" start-up", startup_ios)] if startup_ios else [])
    try:
        drive = drive_config((mqsim / "ssdconfig.xml").read_text(encoding="utf-8"), ideal_map=not cmt)
        stock = (mqsim / "workload.xml").read_text(encoding="utf-8")
        work = {n: workload_config(stock, n) for _, n in runs}
    except (OSError, ValueError, ET.ParseError) as e:
        raise SideBySideError(f"{mqsim}: {e}") from e
    results: dict[str, list[tuple[float, float, int]]] = {who + suffix: [] for suffix, _ in runs for who in ("MQSim", "ssdlab")}
    with tempfile.TemporaryDirectory(prefix="mqsim-sbs-") as tmp:
        here = Path(tmp)
        (here / "ssd.xml").write_text(drive, encoding="utf-8")
        for n, text in work.items():
            (here / f"wl-{n}.xml").write_text(text, encoding="utf-8")
        for r in range(rounds):
            order = ("MQSim", "ssdlab") if r % 2 == 0 else ("ssdlab", "MQSim")
            for suffix, n in runs:
                for who in order:
                    if who == "MQSim":
                        cpu, wall, rss, out = timed([str(binary.resolve()), "-i", "ssd.xml", "-w", f"wl-{n}.xml"], here)
                        got = served(out)
                    else:
                        cpu, wall, rss, out = timed(ssdlab_command(ssdlab, n, cmt), here)
                        got = ssdlab_ios(out)
                    if got != n:
                        raise SideBySideError(f"{who}{suffix} served {got} requests, not {n}")
                    results[who + suffix].append((cpu, wall, rss))
                    say(f"round {r + 1} {who + suffix:6s}: {cpu:7.2f} CPU s  {wall:7.2f} s wall  {rss / 1024:7.0f} MiB peak RSS")
    return results


def table(results: dict[str, list[tuple[float, float, int]]], ios: int, cmt: bool) -> str:
    """The Markdown table of `docs/speed-mqsim.md`, its heading and one row: each program's CPU
    seconds by round, the ratio of the medians, I/Os per CPU second, and the peak RSS; with
    start-up runs in ``results``, also each side's median start-up and the ratio of the
    medians less it."""
    cpu = {k: [c for c, _, _ in v] for k, v in results.items()}
    med = {k: statistics.median(v) for k, v in cpu.items()}
    rss = {k: max(m for _, _, m in results[k]) / 1024 for k in ("MQSim", "ssdlab")}
    rounds = {k: ", ".join(f"{c:.2f}" for c in v) for k, v in cpu.items()}
    label = "2 MiB cached map" if cmt else "all in DRAM"
    cols = ["map", "ssdlab CPU s (rounds)", "MQSim CPU s (rounds)", "ratio of medians", "ssdlab / MQSim I/Os per CPU s", "peak RSS ssdlab / MQSim"]
    cells = [label, rounds["ssdlab"], rounds["MQSim"], f"{med['MQSim'] / med['ssdlab']:.1f}x",
             f"{ios / med['ssdlab'] / 1e3:.0f} k / {ios / med['MQSim'] / 1e3:.0f} k", f"{rss['ssdlab']:.0f} MiB / {rss['MQSim']:.0f} MiB"]
    if "ssdlab start-up" in med:
        start = (med["ssdlab start-up"], med["MQSim start-up"])
        alone = (med["ssdlab"] - start[0], med["MQSim"] - start[1])
        cols += ["start-up CPU s ssdlab / MQSim", "ratio less start-up"]
        cells += [f"{start[0]:.2f} / {start[1]:.2f}", f"{alone[1] / alone[0]:.1f}x" if min(alone) > 0 else "n/a (a run no longer than its start-up)"]
    return "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n| " + " | ".join(cells) + " |"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mqsim", type=Path, required=True, help="a built checkout of CMU-SAFARI/MQSim")
    ap.add_argument("--map", choices=("dram", "cmt"), default="dram", help="the map all in DRAM (default) or MQSim's 2 MiB CMT")
    ap.add_argument("--rounds", type=int, default=3, help="alternating pairs of runs (default 3)")
    ap.add_argument("--ios", type=int, default=1_000_000, help="requests per run (default 10^6)")
    ap.add_argument("--startup-ios", type=int, default=1000, help="requests of each round's start-up runs (default 1000; 0: none)")
    ap.add_argument("--ssdlab", default=None, help="the ssdlab command, split as a shell would (default: the venv's, else the one on PATH)")
    args = ap.parse_args(argv)
    venv = ROOT / ".venv" / "bin" / "ssdlab"
    found = str(venv) if venv.exists() else shutil.which("ssdlab")
    try:
        try:
            ssdlab = shlex.split(args.ssdlab) if args.ssdlab else [found] if found else None
        except ValueError as e:
            raise SideBySideError(f"--ssdlab {args.ssdlab!r}: {e}") from e
        if args.rounds < 1 or args.ios < 1 or args.startup_ios < 0:
            raise SideBySideError("--rounds and --ios must be at least 1, and --startup-ios at least 0")
        if not ssdlab:
            raise SideBySideError("no ssdlab command: run `python3 dev.py setup` or pass --ssdlab")
        results = compare(args.mqsim, ssdlab, args.rounds, args.ios, args.map == "cmt", say=lambda line: print(line, file=sys.stderr),
                          startup_ios=args.startup_ios)
    except SideBySideError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(table(results, args.ios, args.map == "cmt"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
