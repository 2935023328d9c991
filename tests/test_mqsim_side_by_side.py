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
import re, sys
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


def test_both_programs_run_alternately_and_the_table_gives_their_medians(tmp_path: Path) -> None:
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
    assert sbs.main(["--mqsim", str(tmp_path / "nowhere"), "--rounds", "1"]) == 2
