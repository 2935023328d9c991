"""Presets cite a source for every number they set, and load."""

import re

import ssdlab

from conftest import ROOT

NUMBER = re.compile(r"^\s*[a-z_]+\s*=\s*\"?[0-9.]")


def test_every_device_number_has_a_cited_source():
    for path in sorted((ROOT / "presets").glob("*.toml")):
        lines = path.read_text().splitlines()
        header = lines[0] if lines else ""
        assert header.startswith("#"), f"{path.name}: starts with a comment saying what it models"
        table, table_cited = "", False
        for n, line in enumerate(lines, 1):
            if line.startswith("["):
                table = line.split("]")[0].strip("[")
                table_cited = "#" in line
                continue
            if table.startswith("workload") or not NUMBER.match(line):
                continue
            assert "#" in line or table_cited, f"{path.name}:{n}: {line.strip()!r} has no source comment"


def test_every_preset_loads_and_describes_itself():
    for name in ssdlab.presets().index:
        cfg = ssdlab.load_config(name)
        assert cfg.description
