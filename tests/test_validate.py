"""`ssdlab validate`: the device library against its drives' published figures."""

import json

import pytest

import ssdlab
from ssdlab import validate as v


def test_every_library_drive_is_a_preset_with_figures_from_cited_sources():
    names = set(ssdlab.presets().index)
    assert set(v.DEVICES) == {"p4800x", "sz985", "p4500", "970pro", "pm9a3"}
    for device, figs in v.DEVICES.items():
        assert device in names
        assert figs, device
        for f in figs:
            assert f.metric in v.UNITS and f.published > 0 and f.source, (device, f)


def test_validate_one_drive_as_json(cli):
    p = cli("validate", "p4800x", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["figure"] for r in rows] == [f.name for f in v.DEVICES["p4800x"]]
    for r in rows:
        assert r["device"] == "p4800x"
        assert r["error"] == pytest.approx((r["ssdlab"] - r["published"]) / r["published"])


def test_markdown_names_the_missing_mechanism_of_every_miss():
    f = v.Figure("sequential read", "mbs", 2400, "spec", {"rw": "read"})
    rows = [v.Row("p4800x", f, 3600.0), v.Row("p4800x", v.Figure("x", "iops", 100, "spec", {"rw": "randread"}), 110.0)]
    md = v.markdown(rows)
    assert "| sequential read | 2,400 MB/s | 3,600 MB/s | +50 % **miss** |" in md
    assert "| x | 100 IOPS | 110 IOPS | +10 % |" in md
    assert "Misses, and the mechanism believed missing" in md and "PCIe 3.0 x4 link" in md


def test_unknown_drive_and_missing_output_directory_are_usage_errors(cli, tmp_path):
    p = cli("validate", "nosuchdrive")
    assert p.returncode == 2 and "nosuchdrive" in p.stderr and "Traceback" not in p.stderr
    p = cli("validate", "p4800x", "-o", str(tmp_path / "no" / "such" / "dir" / "v.md"))
    assert p.returncode == 2 and "does not exist" in p.stderr and "Traceback" not in p.stderr
