"""Mutation fuzzer for the fio job-file parser (python/ssdlab/fiojob.py), issue 16 item 8.

Seeds: fio's 107 example job files in ../shared/data/fio-jobs (read in place, never copied),
and a few job files of our own. Each case takes a window of a seed's lines and applies 1 to 8
mutations (bytes, fio tokens, edge numbers, lines spliced from other seeds). The property: the
job file either loads (``fiojob.load`` and ``fiojob.resolve`` on a 1 GiB device; one case in 16
also through ``ssdlab.api.load_jobfile`` onto the default device, which builds every group's
config in the core) or raises an :class:`ssdlab.SsdlabError`; any other exception is a bug.

Not fuzzed: ``load_jobfile`` on text with a lone surrogate (only ``text=`` can hold one, a file
read cannot; handing such a str to the core is issue 16's Python-misuse item), running the jobs, and ``include`` of files other than the nonexistent, device and
directory paths the mutations name.

Case ``i`` of seed ``s`` is generated from its own ``random.Random``, so one case replays
alone. Run ``python tests/fuzz_fiojob.py CASES [SEED] [--case I]``; it prints the count, the
split and the wall time; its memory is limited to 4 GiB, so that unbounded memory is a
MemoryError (a failure) rather than a visit from the OOM killer. A failing input is saved under ``$TMPDIR/ssdlab-fuzz-fiojob/``; keep
it in ``tests/data/fuzz-corpus/fiojob/`` (``tests/test_fuzz_fiojob.py`` replays that corpus).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, Optional

from ssdlab import api, fiojob
from ssdlab.exceptions import SsdlabError

ROOT = Path(__file__).resolve().parent.parent
FIO_JOBS = Path(os.environ.get("SSDLAB_SHARED") or ROOT.parent / "shared") / "data" / "fio-jobs"  # as conftest.SHARED
CORPUS = Path(__file__).resolve().parent / "data" / "fuzz-corpus" / "fiojob"
SEED = 0x5EED0016
DEVICE = 1 << 30
MEMORY_LIMIT = 4 << 30
SURROGATE = re.compile("[\ud800-\udfff]")

# Job files of our own, so that the fuzzer has seeds without ../shared.
OWN = [
    "[global]\nioengine=libaio\ndirect=1\nbs=4k\nsize=64m\n\n[randread]\nrw=randread\niodepth=32\nnumjobs=4\n",
    "[seq]\nrw=write\nbs=128k\nnumber_ios=100\nstonewall\n[mixed]\nrw=randrw:8\nrwmixread=70\nbssplit=4k/50:64k/50\nrate_iops=1000,500\n",
    "[zoned]\nzonemode=zbd\nzonesize=64m\nrw=write\nmax_open_zones=4\noffset=10%\nsize=50%\noffset_increment=2z\n",
    "[t]\nrw=read\nthinktime=10us\nstartdelay=1ms\nruntime=5ms\ntime_based\nramp_time=1ms\nfilename=${DEV}\n",
]

TOKENS = [
    "\n", " ", "=", "[", "]", "[global]", "[job]", ";", "#", ",", ":", "/", "%", "-", "+", "*", "$", "${", "}", "${DEV}", "${UNSET}",
    "rw=", "bs=", "bssplit=", "iodepth=", "numjobs=", "size=", "offset=", "ioengine=", "stonewall", "new_group", "include ",
    "include /dev/zero", "include /nonexistent", "include /", "randrw", "randread:", "trim", "libaio", "io_uring", "sync", "net",
    "zonemode=zbd", "zonesize=", "z", "k", "KiB", "m", "g", "t", "p", "e", "us", "ms", "s", "1e9", "nan", "inf", "0x10",
    "-1", "0", "18446744073709551616", "99999999999999999999", "\t", "\r", "\x00", "\ufeff", "\ud800", "\u00e9", "\U0001F600",
]
NUMBERS = ["0", "1", "-1", "4294967296", "9223372036854775808", "18446744073709551616", "1" + "0" * 40, "0.5", "1e308", ""]
ENV = {"DEV": "/dev/nvme0n1", "SIZE": "1g", "BS": "4k", "POOL": "p", "CONT": "c"}


def seeds() -> list[list[str]]:
    """The seed job files, each as a list of lines (with their line ends)."""
    texts = list(OWN)
    if FIO_JOBS.is_dir():
        texts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(FIO_JOBS.glob("*.fio"))]
    return [t.splitlines(keepends=True) for t in texts if t]


def mutate(files: list[list[str]], rng: random.Random) -> str:
    """A window of a seed (up to 40 lines, often the whole file) with 1 to 8 mutations."""
    f = rng.choice(files)
    if len(f) <= 40 or rng.random() < 0.3:
        lines = f
    else:
        start = rng.randrange(len(f))
        lines = f[start : start + rng.randint(1, 40)]
    s = "".join(lines)
    for _ in range(rng.randint(1, 8)):
        i = rng.randint(0, len(s))
        op = rng.randrange(8)
        if op == 0 and s:
            s = s[:i] + chr(rng.randrange(0x80) if rng.random() < 0.9 else rng.randrange(0x110000)) + s[i + 1 :]
        elif op in (1, 2):
            s = s[:i] + rng.choice(TOKENS) + s[i:]
        elif op == 3:
            end = i
            while end < len(s) and s[end].isdigit():
                end += 1
            s = s[:i] + rng.choice(NUMBERS) + s[end:]
        elif op == 4:
            s = s[:i] + s[i + rng.randint(1, 16) :]
        elif op == 5:
            j = rng.randint(0, len(s))
            s = s[:i] + s[j : j + rng.randint(1, 64)] + s[i:]
        elif op == 6:
            s = s[:i] + rng.choice(rng.choice(files)) + s[i:]
        else:
            s = s[:i]
    return s


def check(text: str, full: bool = False, name: str = "fuzz.fio") -> bool:
    """True if the job file loads, False if it is refused with an SsdlabError; anything else
    propagates. ``full`` also builds every group's config in the core."""
    env = ENV if len(text) % 2 else {}
    path = Path(tempfile.gettempdir()) / "ssdlab-fuzz-fiojob" / name
    try:
        groups, _ = fiojob.load(path, env, text)
        for g in groups:
            for e in g.jobs:
                fiojob.resolve(e, DEVICE, zone=64 << 20, handles=4)
        if full and not SURROGATE.search(text):
            api.load_jobfile(path, "default", text=text, env=env)
    except SsdlabError:
        return False
    return True


def run(cases: int, seed: int = SEED, only: Optional[int] = None, say: Callable[[str], None] = print) -> tuple[int, int, float]:
    """Runs ``cases`` inputs (or case ``only``); returns (inputs, loaded, seconds). A failure
    saves its input and raises AssertionError with the replay command."""
    files = seeds()
    loaded = 0
    t = time.perf_counter()
    todo = range(only, only + 1) if only is not None else range(cases)
    for i in todo:
        rng = random.Random((seed << 32) ^ i)
        text = mutate(files, rng)
        try:
            loaded += check(text, full=i % 16 == 0)
        except Exception as e:  # noqa: BLE001 - the property: nothing but SsdlabError
            out = Path(tempfile.gettempdir()) / "ssdlab-fuzz-fiojob" / f"case-{seed}-{i}.fio"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8", errors="surrogatepass")
            raise AssertionError(
                f"case {i}: {type(e).__name__}: {e}\n{traceback.format_exc()}input saved to {out}\n"
                f"replay: python tests/fuzz_fiojob.py 1 {seed} --case {i}"
            ) from e
    wall = time.perf_counter() - t
    n = len(todo)
    say(f"fuzz fiojob: {n} inputs ({loaded} loaded, {n - loaded} refused) in {wall:.1f} s ({n / max(wall, 1e-9):.0f}/s), seed {seed}")
    return n, loaded, wall


def main(argv: Optional[list[str]] = None) -> int:
    # Unbounded memory shows as a MemoryError (a failure), not as the machine's OOM killer.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", type=int)
    ap.add_argument("seed", type=int, nargs="?", default=SEED)
    ap.add_argument("--case", type=int, help="run only this case (replay)")
    a = ap.parse_args(argv)
    run(a.cases, a.seed, a.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
