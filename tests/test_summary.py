"""What `ssdlab run` prints, from the typed summary: keys the printer does not know are
ignored; and the one byte formatter."""

import io
import json

from rich.console import Console

import ssdlab
from ssdlab.summary import RunSummary, print_summary
from ssdlab.units import format_bytes


def test_the_typed_summary_ignores_keys_it_does_not_know_and_prints():
    r = ssdlab.run("tlc", workload={"number_ios": 300})
    d = json.loads(json.dumps(r.summary))
    d["a_future_section"] = {"x": 1}
    d["read"]["a_future_statistic"] = 2.0
    d["flash"]["ftl"]["a_future_counter"] = 3
    s = RunSummary.from_text(json.dumps(d))
    assert s == RunSummary.from_json(r.summary)
    assert s.ios == r.summary["ios"] and s.ops["read"].latency_us.p99 == r.summary["read"]["latency_us"]["p99"]
    assert s.flash is not None and s.flash.waf == r.summary["flash"]["waf"] and s.ats is None and s.replay is None
    out = Console(file=io.StringIO(), width=120)
    print_summary(out, s, "a description", [("workload.number_ios", "300")])
    text = out.file.getvalue()
    assert "a description; with workload.number_ios=300" in text and "Where the time goes" in text and "flash: WAF" in text, text


def test_format_bytes():
    cases = {0: "0 B", 512: "512 B", 1536: "1.5 KiB", 4096: "4 KiB", 2 << 20: "2 MiB", 1 << 30: "1 GiB", 10_000 << 20: "9.766 GiB", 1 << 40: "1 TiB", 4 << 50: "4 PiB"}
    assert {n: format_bytes(n) for n in cases} == cases
