"""Plots respect the user's notebook: no call changes matplotlib's backend; each returns a
Figure with its own canvas, labelled axes, and curves or bars told apart by more than colour."""

import matplotlib
import pandas as pd

import ssdlab
from ssdlab import ats, isolation, probe, probe_plots


def test_no_plot_call_changes_the_backend(tmp_path):
    matplotlib.use("svg")  # a backend no plot of ours would pick: any switch shows
    figs = []
    r = ats.study(synth={"ios": 5000}, stu=["4k", "2m"], policies=["lru", "fifo"], assoc=["full"], lines="1-64")
    figs.append(r.plot(str(tmp_path / "atc.png")))
    df = ssdlab.decompose("openexpress-hw", media={"tlc": "450us", "mram": "65ns"}, ios=50)
    figs.append(ssdlab.plot_decomposition(df, tmp_path / "dec.svg"))
    iso = pd.DataFrame({"case": ["a", "a", "b", "b"], "tenant": ["vm1", "vm2"] * 2, "weight": [1, 2] * 2, "weight_ratio": [1.0, 2.0] * 2, "proportionality": [1.0, 1.5, 1.0, 1.9]})
    figs.append(isolation.plot(iso, str(tmp_path / "iso.png")))
    run = ssdlab.run("default", workload={"number_ios": 3000}, set={"stats.interval": "1ms"})
    figs.append(ssdlab.plot_timeseries(run, tmp_path / "ts.png"))
    p = probe.run_probe(probe.SimTarget(ssdlab.load_config("p4800x")), "quick", ["interleave"])
    figs += [f for f in (probe_plots.plot_strided(p),) if f is not None]
    assert matplotlib.get_backend() == "svg"
    for f in figs:
        # Panels may share an axis and its label; each figure labels both of its directions.
        assert f.canvas is not None and f.axes
        assert any(ax.get_xlabel() for ax in f.axes) and any(ax.get_ylabel() for ax in f.axes), f
    # Curves differ in marker or line style, not in colour alone.
    lines = figs[0].axes[0].get_lines()
    assert len({(ln.get_marker(), ln.get_linestyle()) for ln in lines}) == len(lines) > 1
    # Readable PNGs: wider than 800 px for the ATC plot's two panels.
    import matplotlib.image as mpimg

    assert mpimg.imread(str(tmp_path / "atc.png")).shape[1] >= 1200
