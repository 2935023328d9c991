"""`ssdlab report`: one self-contained HTML page (inline SVG, no external assets) of a sweep
store or a run, its figures also as files, rendered without errors by a real headless browser."""

import os
import re
import shutil
import subprocess

import pytest

import ssdlab
from ssdlab import report

from test_cli import no_traceback

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

SPEC = {
    "name": "grid",
    "base": "p4800x",
    "set": {"workload.number_ios": 1500, "workload.numjobs": 1, "stats.interval": "2ms"},
    "axes": {"workload.iodepth": [1, 8, 64], "workload.bs": ["4k", "64k"]},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("rep") / "grid.store"
    ssdlab.sweep(SPEC, store=str(path), executor="serial")
    return path


def self_contained(text):
    # No scripts, no links to anything outside the page.
    assert "<script" not in text
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#|data:)""", text), re.findall(r"""(?:src|href)\s*=\s*["'][^"']*""", text)[:3]
    assert "<link" not in text and "@import" not in text


def test_a_store_report_has_every_section_inline(store, tmp_path):
    out = tmp_path / "r.html"
    written = report.report(str(store), str(out))
    text = out.read_text()
    self_contained(text)
    for heading in ("Metrics against each axis", "Heatmaps", "Where the time goes", "Time series", "Every point", "Configs"):
        assert f"<h2>{heading}</h2>" in text, heading
    assert text.count("<svg") >= 10 and text.count("<details>") == 6
    # The spec's order on string axes: 4k before 64k.
    assert text.index("workload.bs = 4k") < text.index("workload.bs = 64k")
    figs = [w for w in written if w != str(out)]
    assert figs and all(os.path.getsize(f) > 1000 for f in figs)
    assert {os.path.splitext(f)[1] for f in figs} == {".svg", ".png"}


def test_a_run_report_and_bad_sources(cli, tmp_path):
    run = cli("run", "p4800x", "--json", "-w", "number_ios=1000", "--set", "stats.interval=1ms")
    assert run.returncode == 0, run.stderr
    (tmp_path / "run.json").write_text(run.stdout)
    p = cli("report", str(tmp_path / "run.json"), "-o", str(tmp_path / "run.html"))
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "run.html").read_text()
    self_contained(text)
    assert "Throughput and latency" in text and "Where the time goes" in text and "<svg" in text
    (tmp_path / "bad.json").write_text('{"a": 1,\n "b": }\n')
    (tmp_path / "empty").mkdir()
    for args, needle in (
        ([str(tmp_path / "none.json")], "no such file"),
        ([str(tmp_path / "bad.json")], "bad.json:2"),
        ([str(tmp_path / "empty")], "not a sweep store"),
        ([str(tmp_path / "run.json"), "-o", str(tmp_path / "x.pdf")], "--output"),
    ):
        out = ["-o", str(tmp_path / "o.html")] if "-o" not in args else []
        r = cli("report", *args, *out)
        assert r.returncode == 2, (args, r.stderr)
        no_traceback(r)
        assert needle in r.stderr, (needle, r.stderr)


def test_the_run_page_names_the_run_and_draws_it_honestly(cli, tmp_path):
    # Issue 29, item 13: the run page named neither device nor workload, drew GC in the host's
    # colour under a legend over the bar, and plotted the idle intervals after the last I/O.
    from ssdlab import components, report

    run = cli("run", "tlc-aged", "--json", "-w", "number_ios=3000", "--set", "stats.interval=1ms", "--seed", "3")
    assert run.returncode == 0, run.stderr
    (tmp_path / "run.json").write_text(run.stdout)
    assert cli("report", str(tmp_path / "run.json"), "-o", str(tmp_path / "run.html")).returncode == 0
    text = (tmp_path / "run.html").read_text()
    self_contained(text)
    for needle in ("Run on tlc-aged", "aged to steady state", "<h2>Workload</h2>", "randwrite", "Set over tlc-aged", "workload.number_ios", "stats.interval",
                   "the resolved config", "the largest: "):
        assert needle in text, needle
    # One colour per component.
    colours = {report.component_colour(c) for c in components()}
    assert len(colours) == len(components())
    # The legend has a band of its own below the bars.
    fig = report._breakdown_figure([{c: 1.0 for c in components()}], components())
    fig.canvas.draw()
    legend, axes = fig.legends[0].get_window_extent(), fig.axes[0].get_tightbbox()
    assert legend.y1 <= axes.y0 + 1, (legend, axes)
    # Series end at the last interval with an I/O.
    import pandas as pd

    rows = pd.DataFrame({"end_s": [1, 2, 3, 4, 5], "ios": [5, 0, 7, 0, 0]})
    assert list(report._until_last_io(rows)["end_s"]) == [1, 2, 3]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: apt-get install chromium (python3 dev.py setup installs it as root)")
def test_headless_chromium_renders_the_report(store, tmp_path):
    out = tmp_path / "r.html"
    report.report(str(store), str(out), figures=False)
    shot = tmp_path / "shot.png"
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    r = subprocess.run([*base, "--window-size=1200,3000", f"--screenshot={shot}", out.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    dom = subprocess.run([*base, "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Where the time goes" in dom.stdout and dom.stdout.count("<svg") >= 10
    assert "Uncaught" not in dom.stderr and "Failed to load resource" not in dom.stderr
    # The screenshot shows the page: mostly white with drawn figures, not a blank or an error page.
    import matplotlib.image as mpimg

    img = mpimg.imread(str(shot))
    assert img.shape[0] == 3000 and img.shape[1] == 1200
    dark = (img[..., :3].mean(axis=2) < 0.5).mean()
    coloured = (img[..., :3].std(axis=2) > 0.15).mean()
    assert 0.002 < dark < 0.3 and coloured > 0.001, (dark, coloured)
