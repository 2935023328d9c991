"""`ssdlab validate`: the device library against its drives' published figures."""

import json
from pathlib import Path

import pytest

import ssdlab
from ssdlab import validate as v


def test_every_library_drive_is_a_preset_with_figures_from_cited_sources():
    names = set(ssdlab.presets().index)
    assert set(v.DEVICES) == {"p4800x", "sz985", "p4500", "p4500-1tb", "p4500-4tb", "p3700", "micron9100", "970pro", "pm9a3"}
    for device, figs in v.DEVICES.items():
        assert device in names
        assert figs, device
        for f in figs:
            assert f.metric in v.UNITS and f.published > 0 and f.source, (device, f)
    # Published latency percentiles are predicted on at least three drives, at least eight rows.
    tails = [(d, f) for d, f in v.figures() if v.is_tail(f) and not f.train]
    assert len(tails) >= 8 and len({d for d, _ in tails}) >= 3, tails


def test_each_drive_declares_a_small_training_set_and_fits_an_unknown_to_each_of_its_figures():
    for device, figs in v.DEVICES.items():
        train = [f.name for f in figs if f.train]
        assert 3 * len(train) <= len(figs), f"{device}: {len(train)} of {len(figs)} figures in training"
        fitted = [u.figure for u in v.CALIBRATED.get(device, [])]
        assert sorted(fitted) == sorted(train), f"{device}: every training figure has its unknown, and only those"
        preset = (Path(__file__).parent.parent / "presets" / f"{device}.toml").read_text()
        for u in v.CALIBRATED.get(device, []):
            leaf = u.key.rsplit(".", 1)[1]
            assert any(line.startswith(f"{leaf} = ") and "[CAL]" in line for line in preset.splitlines()), f"{device}: {u.key} is in the preset with its [CAL] note"
    s = v.summary([v.Row("x", f, f.published * 1.2) for f in v.DEVICES["970pro"]])
    assert s["train"] == 1 and s["predicted"] == 3 and s["within_15"] == 0 and s["within_25"] == 1


def test_a_carried_unknown_is_the_value_its_source_drive_was_fitted_to():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]

    root = Path(__file__).parent.parent / "presets"
    for device, carried in v.CARRIED.items():
        text = (root / f"{device}.toml").read_text()
        for key, source in carried:
            assert any(u.key == key for u in v.CALIBRATED[source]), f"{source} fits {key}"
            section, leaf = key.rsplit(".", 1)

            def get(t: dict, path: str = section, leaf: str = leaf) -> object:
                for part in path.split("."):
                    t = t[part]
                return t[leaf]

            mine, theirs = get(tomllib.loads(text)), get(tomllib.loads((root / f"{source}.toml").read_text()))
            assert mine == theirs, f"{device}.{key} = {mine}, {source}'s fit is {theirs}"
            assert any(line.startswith(f"{leaf} = ") and f"[CAL-{source.upper()}]" in line for line in text.splitlines())


def test_derived_preset_values_follow_from_their_cited_facts():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]

    def get(t: dict, key: str) -> object:
        for part in key.split("."):
            t = t[part]
        return t

    # The LRW model at the 1 TB drive's spare, and its inverse.
    assert v.lrw_waf(0.1914) == pytest.approx(2.804, abs=1e-3)
    assert v.spare_from_endurance(1e12, 1e12 * 500 * v.drive_writes_per_cycle(0.2), 500) == pytest.approx(0.2, abs=1e-9)
    pe, spares = v.p4500_spares()
    assert 3000 < pe < 3300, "a P/E budget of enterprise TLC"
    for d, (user, _) in v.P4500_ENDURANCE.items():
        dies = {"p4500-1tb": 24, "p4500": 48, "p4500-4tb": 96}[d]
        assert spares[d] <= 1 - user / (dies * v.P4500_DIE_BYTES) + 1e-9, f"{d}: no more spare than its dies hold"
    root = Path(__file__).parent.parent / "presets"
    for d, keys in v.DERIVED.items():
        cfg = tomllib.loads(ssdlab.load_config(d).toml)
        text = (root / f"{d}.toml").read_text()
        for key, rule in keys:
            assert rule
            value = get(cfg, key)
            if key == "ftl.op_ratio":
                assert value == pytest.approx(spares[d], abs=5e-5), d
            else:
                assert key == "ctrl.firmware.gc_move_cycles" and value == get(cfg, "ctrl.firmware.write_cycles") > 0, d
            leaf = key.rsplit(".", 1)[1]
            lines = [line for line in text.splitlines() if line.startswith(f"{leaf} = ")]
            assert all("[DERIVED]" in line for line in lines), f"{d}: {key} is marked [DERIVED] where the preset sets it"


def test_an_unknown_fitted_on_a_seed_figure_reproduces_it():
    from ssdlab import probe

    root = Path(__file__).parent.parent / "presets"
    for device, fitted in v.SEED_TRAINED.items():
        text = (root / f"{device}.toml").read_text()
        # The one seed figure fitted so far is seed 004's crowded-chunk ratio.
        crowded = {r["rule"]: r for r in probe.probe(device, experiments=["crowded"]).rules}["crowded"]
        for key, _, value, _ in fitted:
            leaf = key.rsplit(".", 1)[1]
            assert any(line.startswith(f"{leaf} = ") and "[CAL-S" in line for line in text.splitlines()), key
            assert crowded["value"] == pytest.approx(value, rel=0.05), crowded["figure"]


def test_the_fit_reproduces_the_calibrated_value_in_the_preset():
    # The 970 PRO's one unknown: its one-shot program time, fitted on its sequential writes.
    from ssdlab import fit

    [r] = fit.fit("970pro")
    preset = (Path(__file__).parent.parent / "presets" / "970pro.toml").read_text()
    assert f'one_shot_program = "{r.value}"' in preset, r.value
    assert abs(r.error) < 0.01


def test_validate_one_drive_as_json(cli):
    p = cli("validate", "p4800x", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["figure"] for r in rows] == [f.name for f in v.DEVICES["p4800x"]]
    assert {r["role"] for r in rows} == {"train", "predicted"}
    for r in rows:
        assert r["device"] == "p4800x"
        assert r["error"] == pytest.approx((r["ssdlab"] - r["published"]) / r["published"])


def test_markdown_names_the_missing_mechanism_of_every_miss():
    f = v.Figure("sequential read", "mbs", 2400, "spec", {"rw": "read"})
    rows = [v.Row("p4800x", f, 3600.0), v.Row("p4800x", v.Figure("x", "iops", 100, "spec", {"rw": "randread"}), 110.0)]
    md = v.markdown(rows)
    assert "| sequential read | predicted | 2,400 MB/s | 3,600 MB/s | +50 % **miss** |" in md
    assert "| x | predicted | 100 IOPS | 110 IOPS | +10 % |" in md
    assert "2 predicted means and rates, 50 % of them within ±15 %, 50 % within ±25 %" in md
    assert "Misses, and the mechanism believed missing" in md


def test_qos_rows_read_their_percentile_and_count_apart_with_their_own_tolerance():
    # A QoS row is a latency percentile: it misses beyond 35 %, and the summary counts it
    # apart from the means and rates.
    near = v.Figure("QD1 4 KiB random read latency, 99th percentile", "p99", 100.0, "review", {"rw": "randread"})
    far = v.Figure("QD1 4 KiB random read latency, 99.999th percentile", "p99.999", 100.0, "review", {"rw": "randread"})
    mean = v.Figure("x", "iops", 100, "spec", {"rw": "randread"})
    rows = [v.Row("a", near, 130.0), v.Row("b", far, 140.0), v.Row("a", mean, 110.0)]
    s = v.summary(rows)
    assert (s["predicted"], s["tails"], s["tail_drives"], s["tails_within"]) == (1, 2, 2, 0.5)
    md = v.markdown(rows)
    assert "| QD1 4 KiB random read latency, 99th percentile | predicted | 100.0 us | 130.0 us | +30 % |" in md
    assert "| 140.0 us | +40 % **miss** |" in md
    assert "2 predicted QoS percentiles over 2 drives, 50 % within ±35 %" in md
    # The run reads the percentile it names: stats.percentiles asks for it.
    assert v._settings(far)["stats.percentiles"] == [99.999]
    assert "stats.percentiles" not in v._settings(mean)


def test_unknown_drive_and_missing_output_directory_are_usage_errors(cli, tmp_path):
    p = cli("validate", "nosuchdrive")
    assert p.returncode == 2 and "nosuchdrive" in p.stderr and "Traceback" not in p.stderr
    p = cli("validate", "p4800x", "-o", str(tmp_path / "no" / "such" / "dir" / "v.md"))
    assert p.returncode == 2 and "does not exist" in p.stderr and "Traceback" not in p.stderr
