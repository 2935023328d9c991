"""`ssdlab reproduce`: each study's published figures, quoted with their place in the seed
text, beside ours, with a verdict; one row per published figure."""

import json
import math
import os

import pytest

from ssdlab import reproduce as rp

from test_cli import no_traceback

SEEDS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "seeds")


def test_every_quote_is_in_the_seed_at_its_line():
    if not os.path.isdir(SEEDS):
        pytest.skip("../shared/seeds is not beside the repository")
    for name, make in rp.STUDIES.items():
        for f in make("quick").figures:
            file, line = f.where.rsplit(":", 1)
            with open(os.path.join(SEEDS, file), encoding="utf-8") as fh:
                lines = fh.read().splitlines()
            # The quote's words are on that line (a parenthesised note of ours may follow it).
            quote = f.quote.split(" (")[0]
            assert quote in lines[int(line) - 1], (name, f.name, f.where, lines[int(line) - 1][:120])


def test_verdicts_follow_direction_and_the_25_percent_band():
    f = rp.Figure("x", 4.6, "x", "q", "s:1", lambda s: 0.0)
    assert rp.verdict(f, 4.0)[1] == "matches" and rp.verdict(f, 2.3)[1] == "direction" and rp.verdict(f, 0.9)[1] == "miss"
    assert math.isclose(rp.verdict(f, 4.6 * 1.25)[0], 25.0)
    d = rp.Figure("y", None, "", "q", "s:1", lambda s: 0.0, 0.0)
    assert rp.verdict(d, 3.0) == (None, "holds") and rp.verdict(d, -1.0) == (None, "miss")
    assert rp.verdict(d, math.nan)[1] == "not measured"


def test_optane_contract_on_the_quick_profile(cli, tmp_path):
    p = cli("reproduce", "optane-contract", "-o", str(tmp_path), "-j", "2", "--json", timeout=600)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    figures = rp.STUDIES["optane-contract"]("quick").figures
    assert [r["figure"] for r in rows] == [f.name for f in figures]  # one row per published figure
    v = {r["figure"]: r for r in rows}
    assert all(v[f"Optane: {t} (rule holds)"]["verdict"] == "holds" for t in ("Avoid crowded accesses", "Forget garbage collection"))
    assert v["Optane: interleaving degree"]["ours"] == 7 and v["Optane: interleaving degree"]["verdict"] == "matches"
    assert v["Optane: misaligned latency over aligned"]["verdict"] == "matches"
    assert (tmp_path / "figures.csv").exists() and (tmp_path / "optane-contract-probes.html").exists()
    again = cli("reproduce", "optane-contract", "-o", str(tmp_path), "--json", timeout=600)
    assert json.loads(again.stdout) == rows  # the stores hold every point: the re-run is the same


def test_unknown_study_exits_2(cli):
    p = cli("reproduce", "moneta-2")
    assert p.returncode == 2 and "optane-contract" in p.stderr
    no_traceback(p)


def test_the_working_list_of_seed_figures_quotes_each_seed_at_its_lines():
    import re

    if not os.path.isdir(SEEDS):
        pytest.skip("../shared/seeds is not beside the repository")
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "seed-figures.md"), encoding="utf-8") as fh:
        doc = fh.read()
    files = {f[:3]: f for f in os.listdir(SEEDS) if f.endswith(".txt")}
    checked = 0
    for section in re.split(r"^## ", doc, flags=re.M)[1:]:
        seed = section[:3]
        with open(os.path.join(SEEDS, files[seed]), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        for row in section.splitlines():
            m = re.match(r"^\|.*\| (\d+)(?:–(\d+))? \|$", row)
            if not m:
                continue
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            text = " ".join(" ".join(lines[lo - 1:hi]).split())
            for quote in re.findall(r"`([^`]+)`", row):
                assert " ".join(quote.split()) in text, (seed, lo, hi, quote, text[:200])
                checked += 1
    assert checked >= 35
