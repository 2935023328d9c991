"""The MQSim side-by-side tool (tools/mqsim_side_by_side.py): the configuration it derives from
MQSim's stock files, and a run that stops short of its count being an error. MQSim itself is
not built here (its checkout comes from GitHub); a stand-in binary that keeps MQSim's rule for
``Stop_Time`` takes its place, and ssdlab runs for real."""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import mqsim_side_by_side as sbs  # noqa: E402

FLOW = """<IO_Flow_Parameter_Set_Synthetic>
  <Priority_Class>HIGH</Priority_Class>
  <Channel_IDs>0,1,2,3,4,5,6,7</Channel_IDs>
  <Synthetic_Generator_Type>QUEUE_DEPTH</Synthetic_Generator_Type>
  <Read_Percentage>{read}</Read_Percentage>
  <Address_Distribution>STREAMING</Address_Distribution>
  <Average_Request_Size>8</Average_Request_Size>
  <Seed>{seed}</Seed>
  <Average_No_of_Reqs_in_Queue>16</Average_No_of_Reqs_in_Queue>
  <Stop_Time>10000000000</Stop_Time>
  <Total_Requests_To_Generate>0</Total_Requests_To_Generate>
</IO_Flow_Parameter_Set_Synthetic>"""

# Shaped as MQSim's stock workload.xml: several scenarios, several flows each.
WORKLOAD = (f"<MQSim_IO_Scenarios><IO_Scenario>{FLOW.format(read=0, seed=798)}{FLOW.format(read=0, seed=6533)}</IO_Scenario>"
            f"<IO_Scenario>{FLOW.format(read=100, seed=11)}</IO_Scenario></MQSim_IO_Scenarios>")
DRIVE = ("<Execution_Parameter_Set><Device_Parameter_Set><Seed>123</Seed><Ideal_Mapping_Table>false</Ideal_Mapping_Table>"
         "<CMT_Capacity>2097152</CMT_Capacity></Device_Parameter_Set></Execution_Parameter_Set>")

# MQSim's rule: a flow with a Stop_Time other than 0 stops there, whatever its request count;
# this stand-in then serves half the requests.
STAND_IN = """#!{python}
import os, re, sys
drive = open(sys.argv[sys.argv.index("-i") + 1]).read()
ideal = re.search(r"<Ideal_Mapping_Table>(\\w+)<", drive).group(1)
if ideal != os.environ.get("EXPECT_IDEAL", ideal):
    sys.exit("Ideal_Mapping_Table is " + ideal)
text = open(sys.argv[sys.argv.index("-w") + 1]).read()
n = int(re.search(r"<Total_Requests_To_Generate>(\\d+)<", text).group(1))
stop = int(re.search(r"<Stop_Time>(\\d+)<", text).group(1))
print("Flow Host.IO_Flow.Synth.No_0 - total requests generated: %d total requests serviced:%d" % (n, n // 2 if stop else n))
"""


def test_the_workload_is_the_first_flow_made_random_reads_at_qd32_that_stop_by_count() -> None:
    root = ET.fromstring(sbs.workload_config(WORKLOAD, 1234))
    scenarios = root.findall("IO_Scenario")
    assert len(scenarios) == 1
    flows = scenarios[0].findall("IO_Flow_Parameter_Set_Synthetic")
    assert len(flows) == 1
    f = flows[0]
    assert f.findtext("Seed") == "798"  # the first flow, the rest as it was
    assert f.findtext("Channel_IDs") == "0,1,2,3,4,5,6,7"
    assert f.findtext("Average_Request_Size") == "8"
    assert f.findtext("Read_Percentage") == "100"
    assert f.findtext("Address_Distribution") == "RANDOM_UNIFORM"
    assert f.findtext("Average_No_of_Reqs_in_Queue") == "32"
    assert f.findtext("Stop_Time") == "0"
    assert f.findtext("Total_Requests_To_Generate") == "1234"


def test_the_drive_keeps_its_settings_with_the_map_in_dram_or_cached() -> None:
    for ideal, text in ((True, "true"), (False, "false")):
        params = ET.fromstring(sbs.drive_config(DRIVE, ideal)).find("Device_Parameter_Set")
        assert params is not None
        assert params.findtext("Ideal_Mapping_Table") == text
        assert params.findtext("CMT_Capacity") == "2097152"
        assert params.findtext("Seed") == "123"


def test_a_file_without_what_it_must_set_is_named() -> None:
    with pytest.raises(sbs.SideBySideError, match="Stop_Time"):
        sbs.workload_config(WORKLOAD.replace("<Stop_Time>10000000000</Stop_Time>", ""), 10)
    with pytest.raises(sbs.SideBySideError, match="QUEUE_DEPTH"):
        sbs.workload_config(WORKLOAD.replace("QUEUE_DEPTH", "BANDWIDTH"), 10)
    with pytest.raises(sbs.SideBySideError, match="Ideal_Mapping_Table"):
        sbs.drive_config(DRIVE.replace("<Ideal_Mapping_Table>false</Ideal_Mapping_Table>", ""), True)


def checkout(tmp_path: Path, workload: str) -> Path:
    (tmp_path / "ssdconfig.xml").write_text(DRIVE)
    (tmp_path / "workload.xml").write_text(workload)
    binary = tmp_path / "MQSim"
    binary.write_text(STAND_IN.format(python=sys.executable))
    binary.chmod(0o755)
    return tmp_path


def test_both_programs_run_alternately_and_the_table_gives_their_medians(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPECT_IDEAL", "true")
    said: list[str] = []
    results = sbs.compare(checkout(tmp_path, WORKLOAD), [sys.executable, "-m", "ssdlab"], 2, 300, False, say=said.append)
    assert [s.split(":")[0] for s in said] == ["round 1 MQSim ", "round 1 ssdlab", "round 2 ssdlab", "round 2 MQSim "]
    assert all(len(v) == 2 and all(cpu > 0 and rss > 0 for cpu, _, rss in v) for v in results.values())
    row = sbs.table(results, 300, False).splitlines()[-1]
    assert row.startswith("| all in DRAM | ") and row.count("|") == 7


def test_a_run_that_serves_fewer_requests_than_asked_is_an_error(tmp_path: Path) -> None:
    # Were Stop_Time left as the stock file has it, MQSim would stop early.
    stuck = checkout(tmp_path, WORKLOAD)
    (stuck / "MQSim").write_text(STAND_IN.format(python=sys.executable).replace("if stop else n", "if True else n"))
    with pytest.raises(sbs.SideBySideError, match="MQSim served 150 requests, not 300"):
        sbs.compare(stuck, [sys.executable, "-m", "ssdlab"], 1, 300, False, say=lambda _: None)


def test_the_cached_map_runs_both_with_their_cmt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPECT_IDEAL", "false")
    sbs.compare(checkout(tmp_path, WORKLOAD), [sys.executable, "-m", "ssdlab"], 1, 200, True, say=lambda _: None)
    assert "ftl.map_cache=2MiB" in sbs.ssdlab_command(["ssdlab"], 200, True)
    assert "ftl.map_cache=2MiB" not in sbs.ssdlab_command(["ssdlab"], 200, False)
    monkeypatch.setenv("EXPECT_IDEAL", "true")
    with pytest.raises(sbs.SideBySideError, match="Ideal_Mapping_Table is false"):
        sbs.compare(tmp_path, [sys.executable, "-m", "ssdlab"], 1, 200, True, say=lambda _: None)


def test_an_ssdlab_run_short_of_its_count_or_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    short = [sys.executable, "-c", "print('{\"ios\": 7}')"]
    with pytest.raises(sbs.SideBySideError, match="ssdlab served 7 requests, not 300"):
        sbs.compare(checkout(tmp_path, WORKLOAD), short, 1, 300, False, say=lambda _: None)
    with pytest.raises(sbs.SideBySideError, match="cannot run it"):
        sbs.compare(tmp_path, [str(tmp_path / "no-such-ssdlab")], 1, 300, False, say=lambda _: None)


def test_the_table_row_gives_rounds_medians_ratio_and_rates() -> None:
    results = {"MQSim": [(12.0, 12.1, 2048 * 1024), (13.0, 13.1, 2000 * 1024), (11.0, 11.1, 1024)],
               "ssdlab": [(2.0, 2.1, 48 * 1024), (3.0, 3.1, 40 * 1024), (2.5, 2.6, 1024)]}
    cells = [c.strip() for c in sbs.table(results, 1_000_000, True).splitlines()[-1].split("|")[1:-1]]
    assert cells == ["2 MiB cached map", "2.00, 3.00, 2.50", "12.00, 13.00, 11.00", "4.8x", "400 k / 83 k", "48 MiB / 2048 MiB"]


def test_the_cli_says_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sbs.main(["--mqsim", str(checkout(tmp_path, WORKLOAD)), "--rounds", "1", "--ssdlab", "unbalanced 'quote"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --ssdlab") and err.count("\n") == 1
    assert sbs.main(["--mqsim", str(tmp_path / "nowhere"), "--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no MQSim binary" in err and err.count("\n") == 1


def test_start_up_runs_follow_each_pair_in_its_order_and_the_table_takes_them_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPECT_IDEAL", "true")
    said: list[str] = []
    results = sbs.compare(checkout(tmp_path, WORKLOAD), [sys.executable, "-m", "ssdlab"], 2, 300, False, say=said.append, startup_ios=100)
    assert [s.split(":")[0].strip() for s in said] == [
        "round 1 MQSim", "round 1 ssdlab", "round 1 MQSim start-up", "round 1 ssdlab start-up",
        "round 2 ssdlab", "round 2 MQSim", "round 2 ssdlab start-up", "round 2 MQSim start-up"]
    assert sorted(results) == ["MQSim", "MQSim start-up", "ssdlab", "ssdlab start-up"]
    lines = sbs.table(results, 300, False).splitlines()
    assert lines[0].endswith("| start-up CPU s ssdlab / MQSim | ratio less start-up |")
    assert lines[2].count("|") == 9


def test_the_ratio_less_start_up_is_that_of_the_medians_less_their_start_ups() -> None:
    results = {"MQSim": [(12.0, 12.1, 2048 * 1024), (13.0, 13.1, 2000 * 1024), (11.0, 11.1, 1024)],
               "ssdlab": [(2.0, 2.1, 48 * 1024), (3.0, 3.1, 40 * 1024), (2.5, 2.6, 1024)],
               "MQSim start-up": [(2.0, 2.0, 1024), (1.0, 1.0, 1024), (3.0, 3.0, 99 * 1024 * 1024)],
               "ssdlab start-up": [(0.4, 0.4, 1024), (0.5, 0.5, 1024), (0.6, 0.6, 1024)]}
    cells = [c.strip() for c in sbs.table(results, 1_000_000, False).splitlines()[-1].split("|")[1:-1]]
    # (12 - 2) / (2.5 - 0.5); the peak RSS is the measured runs', not the start-ups'.
    assert cells[3:] == ["4.8x", "400 k / 83 k", "48 MiB / 2048 MiB", "0.50 / 2.00", "5.0x"]
    results["ssdlab start-up"] = [(2.5, 2.5, 1024)] * 3
    assert sbs.table(results, 1_000_000, False).splitlines()[-1].split("|")[-2].strip().startswith("n/a")


def test_a_start_up_run_short_of_its_count_is_an_error_and_a_negative_count_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    short = checkout(tmp_path, WORKLOAD)
    (short / "MQSim").write_text(STAND_IN.format(python=sys.executable).replace("if stop else n", "if stop else (n - 1 if n < 100 else n)"))
    with pytest.raises(sbs.SideBySideError, match="MQSim start-up served 49 requests, not 50"):
        sbs.compare(short, [sys.executable, "-m", "ssdlab"], 1, 300, False, say=lambda _: None, startup_ios=50)
    assert sbs.main(["--mqsim", str(short), "--startup-ios", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--startup-ios" in err and err.count("\n") == 1
