"""Seed 001's decomposition from Python: the study as a DataFrame, and its plot."""

import os
import signal
import subprocess
import sys
import time

import matplotlib
import pytest

import ssdlab
from ssdlab.decompose import SEED001_MEDIA, SEED001_PARTS

from conftest import ROOT

MEDIA = {"tlc": "450us", "mram": "65ns"}


@pytest.fixture(scope="module")
def frames():
    return {c: ssdlab.decompose(c, media=MEDIA, ios=200) for c in ("openexpress-fw", "openexpress-hw")}


def test_one_row_per_medium_and_a_column_per_category(frames):
    df = frames["openexpress-fw"]
    assert list(df.index) == ["tlc", "mram"] and df.index.name == "medium"
    assert list(df.columns) == list(SEED001_PARTS)
    assert (df >= 0).all().all() and (df.sum(axis=1) > 0).all()
    assert df.attrs == {"config": "openexpress-fw", "read_latency": MEDIA}
    assert list(SEED001_MEDIA) == ["tlc", "mlc", "slc", "znand", "pram", "mram"]


def test_shares_follow_seed001(frames):
    """Firmware spends most of a fast medium's read outside the medium; hardware automation
    removes it; on slow flash the medium dominates either way."""
    fw, hw = frames["openexpress-fw"], frames["openexpress-hw"]
    nvm = lambda df, m: df.loc[m, "NVM"] / df.loc[m].sum()  # noqa: E731
    assert nvm(fw, "tlc") > 0.9 and nvm(hw, "tlc") > 0.9
    assert nvm(fw, "mram") < 0.5 < nvm(hw, "mram")
    assert hw.loc["mram"].sum() < fw.loc["mram"].sum()
    # The medium's own latency shows in NVM; the rest of the path does not depend on it.
    assert fw.loc["tlc", "NVM"] - fw.loc["mram", "NVM"] == pytest.approx(450 - 0.065, abs=0.01)
    assert fw.loc["tlc", "Controller"] == pytest.approx(fw.loc["mram", "Controller"])
    # Every category is there: the firmware takes each doorbell and dispatches its queue.
    assert (fw > 0).all().all(), fw
    assert (fw["Queue/Doorbells"] > hw["Queue/Doorbells"]).all(), "automation handles doorbells faster"


def test_the_same_numbers_as_the_command_line(frames, cli):
    import json

    p = cli("decompose", "openexpress-fw", "--json", "--ios", "200", "--media", "tlc=450us,mram=65ns")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == frames["openexpress-fw"].to_dict(orient="index")


def test_progress_and_seed():
    seen = []
    df = ssdlab.decompose("openexpress-hw", media={"pram": "120ns"}, ios=50, seed=3, progress=seen.append)
    assert list(df.index) == ["pram"] and seen and seen[-1] == 1.0 and seen == sorted(seen)


def test_bad_input_is_a_config_error():
    with pytest.raises(ssdlab.ConfigError, match="media"):
        ssdlab.decompose(media={})
    with pytest.raises(ssdlab.ConfigError, match="read_latency"):
        ssdlab.decompose(media={"x": "4 parsecs"}, ios=10)


def test_plot_writes_png_and_svg_and_leaves_the_backend_alone(frames, tmp_path, monkeypatch):
    backend = matplotlib.get_backend()

    def no_switching(*args, **kwargs):
        raise AssertionError("the plot must not switch matplotlib's backend")

    monkeypatch.setattr(matplotlib, "use", no_switching)
    for name in ("dec.png", "dec.svg"):
        fig = ssdlab.plot_decomposition(frames["openexpress-hw"], tmp_path / name)
        assert (tmp_path / name).stat().st_size > 1000
    assert (tmp_path / "dec.svg").read_text().lstrip().startswith("<?xml")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "medium (read latency)" and ax.get_ylabel() == "share of device latency (fraction)"
    assert "openexpress-hw" in ax.get_title()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["tlc\n450us", "mram\n65ns"]
    assert sum(p.get_height() for c in ax.containers for p in c.patches) == pytest.approx(2.0)  # each bar's shares add up to 1
    assert matplotlib.get_backend() == backend
    assert ssdlab.plot_decomposition(frames["openexpress-hw"], title="T").axes[0].get_title() == "T"  # no file
    with pytest.raises(ssdlab.ConfigError, match="png or .svg"):
        ssdlab.plot_decomposition(frames["openexpress-hw"], tmp_path / "dec.gif")


def test_ctrl_c_stops_the_command_cleanly():
    p = subprocess.Popen(
        [sys.executable, "-m", "ssdlab", "decompose", "--ios", "100000000"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )
    time.sleep(2.0)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err)
    assert err.strip().endswith("interrupted") and "Traceback" not in err and "Aborted" not in err
