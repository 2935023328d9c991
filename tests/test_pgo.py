"""The profile-guided build's helper (tools/pgo.py): the flags it keeps from the config, the
environment it builds with, and its ways out to a plain build."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import pgo  # noqa: E402


def tree_with(tmp_path: Path, config: str) -> Path:
    (tmp_path / ".cargo").mkdir()
    (tmp_path / ".cargo" / "config.toml").write_text(config)
    return tmp_path


def test_the_hosts_target_flags_are_kept_over_the_build_flags(tmp_path: Path) -> None:
    host = pgo.host()
    tree = tree_with(tmp_path, f'[build]\nrustflags = ["-C", "opt-level=2"]\n[target.{host}]\nrustflags = ["-C", "target-cpu=x86-64-v2"]\n[target.no-such-triple]\nrustflags = ["-C", "x"]\n')
    assert pgo.config_flags(tree) == ["-C", "target-cpu=x86-64-v2"]


def test_the_build_flags_apply_where_the_host_has_none_and_a_string_is_split(tmp_path: Path) -> None:
    tree = tree_with(tmp_path, '[build]\nrustflags = "-C opt-level=2"\n')
    assert pgo.config_flags(tree) == ["-C", "opt-level=2"]
    assert pgo.config_flags(tmp_path / "nowhere") == []


def test_this_repositorys_flags_are_what_its_config_gives_this_host() -> None:
    flags = pgo.config_flags(ROOT)
    if pgo.host() == "x86_64-unknown-linux-gnu":
        assert flags == ["-C", "target-cpu=x86-64-v2"]
    else:
        assert flags == []


def test_the_environment_carries_exactly_the_flags_even_with_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSTFLAGS", "-C debuginfo=0")
    env = pgo.encoded(["-C", "target-cpu=x86-64-v2", "-Cprofile-use=/a dir/merged.profdata"])
    assert "RUSTFLAGS" not in env
    assert env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f") == ["-C", "target-cpu=x86-64-v2", "-Cprofile-use=/a dir/merged.profdata"]


def test_pgo_off_builds_plainly_without_building_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSDLAB_PGO", "0")
    said: list[str] = []
    assert pgo.profile(ROOT, tmp_path / "work", said.append) is None
    assert said and "SSDLAB_PGO=0" in said[0]
    assert not (tmp_path / "work").exists()


def test_a_failed_instrumented_build_falls_back_to_a_plain_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSDLAB_PGO", "1")
    monkeypatch.setattr(pgo, "profdata", lambda say: Path("/bin/true"))
    monkeypatch.setattr(subprocess, "run", _cargo_fails(subprocess.run))
    said: list[str] = []
    assert pgo.profile(tmp_path, tmp_path / "work", said.append) is None
    assert any("instrumented build failed" in s for s in said)


def _cargo_fails(real):  # type: ignore[no-untyped-def]
    def run(cmd, *args, **kw):  # type: ignore[no-untyped-def]
        if cmd and cmd[0] == "cargo":
            return subprocess.CompletedProcess(cmd, 101)
        return real(cmd, *args, **kw)

    return run


def test_a_failed_guided_build_of_the_revision_is_built_again_plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # tools/bench_against.py: REV's profile trained, but the build with it failed. REV is built
    # again plain (its module then exists), and the caller is told it is plain, so that HEAD is
    # built plain beside it.
    import bench_against

    monkeypatch.setattr(bench_against, "ROOT", tmp_path)
    sha = bench_against.git("rev-parse", "HEAD")
    (tmp_path / "target" / "against" / sha[:12]).mkdir(parents=True)
    monkeypatch.setattr(pgo, "profile", lambda tree, work, say: ["-Cprofile-use=/nowhere.profdata"])
    builds: list[bool] = []
    real = subprocess.run

    def cargo(cmd, *args, **kw):  # type: ignore[no-untyped-def]
        if cmd[0] != "cargo":
            return real(cmd, *args, **kw)
        guided = kw.get("env") is not None
        builds.append(guided)
        if guided:
            return subprocess.CompletedProcess(cmd, 101)
        lib = pgo.module_file(Path(cmd[cmd.index("--target-dir") + 1]))
        lib.parent.mkdir(parents=True, exist_ok=True)
        lib.write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", cargo)
    said: list[str] = []
    monkeypatch.setattr(bench_against, "say", said.append)
    lib, guided = bench_against.build("HEAD")
    assert builds == [True, False] and not guided and lib.exists()
    assert any("profile-guided build failed: building it plain" in s for s in said)


def test_a_revision_that_does_not_build_at_all_is_a_clear_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench_against

    monkeypatch.setattr(bench_against, "ROOT", tmp_path)
    sha = bench_against.git("rev-parse", "HEAD")
    (tmp_path / "target" / "against" / sha[:12]).mkdir(parents=True)
    monkeypatch.setattr(pgo, "profile", lambda tree, work, say: None)
    monkeypatch.setattr(subprocess, "run", _cargo_fails(subprocess.run))
    monkeypatch.setattr(bench_against, "say", lambda s: None)
    with pytest.raises(SystemExit) as e:
        bench_against.build("HEAD")
    assert "did not build" in str(e.value.code)


def test_the_guard_runs_more_rounds_of_a_scenario_whose_rounds_disagree(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Two scenarios, both sides the same speed, but one round of "noisy" takes HEAD ten times
    # as long (a VM's stall): its three rounds spread 10x, so it runs the settle rounds and its
    # median comes from seven; "steady" runs three.
    import bench_against

    head, base = Path("/head.so"), Path("/base.so")
    monkeypatch.setattr(bench_against, "build", lambda rev: (base, True))
    monkeypatch.setattr(bench_against, "head_module", lambda: head)
    monkeypatch.setattr(bench_against, "say", lambda s: None)
    runs: dict[tuple[Path, str], int] = {}

    def child(module: Path, *args: str) -> object:
        if args == ("--list",):
            return ["steady", "noisy"]
        name = args[0]
        k = runs[(module, name)] = runs.get((module, name), 0) + 1
        cpu = 10.0 if (module, name, k) == (head, "noisy", 2) else 1.0
        return {"cpu_s": cpu, "events": 100}

    monkeypatch.setattr(bench_against, "child", child)
    assert bench_against.against("HEAD~1", 3, 0.1, [], settle=4) == 0
    assert runs == {(head, "steady"): 3, (base, "steady"): 3, (head, "noisy"): 7, (base, "noisy"): 7}
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert rows["steady"][3] == "1.00x" and rows["steady"][-1] == "3"
    assert rows["noisy"][3] == "1.00x" and rows["noisy"][-1] == "7", "the stalled round is outvoted"
    # Without settle rounds the row keeps its three, and the table no rounds column.
    runs.clear()
    assert bench_against.against("HEAD~1", 3, 0.1, [], settle=0) == 0
    assert runs[(head, "noisy")] == 3
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert rows["noisy"][-1] == "1.00x"


def test_the_guard_counts_the_event_loop_alone_where_asked(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # `--instructions run`: a simulated scenario is counted inside the event loop, a stream
    # scenario (no events) inside the whole `bench_run`; a side whose loop counted nothing
    # shows no ratio rather than a ratio of unlike spans. Plain `--instructions` counts every
    # scenario whole.
    import bench_against

    head, base = Path("/head.so"), Path("/base.so")
    monkeypatch.setattr(bench_against, "build", lambda rev: (base, True))
    monkeypatch.setattr(bench_against, "head_module", lambda: head)
    monkeypatch.setattr(bench_against, "say", lambda s: None)

    def child(module: Path, *args: str) -> object:
        if args == ("--list",):
            return ["aged", "atc", "renamed"]
        return {"cpu_s": 1.0, "events": 0 if args[0] == "atc" else 100}

    # Each side's counts: the whole scenario is ten times its event loop; REV's "renamed"
    # scenario has no loop of that name to count.
    loop = {(head, "aged"): 900, (base, "aged"): 1000, (head, "renamed"): 500, (base, "renamed"): 0}
    whole = {(head, "atc"): 300, (base, "atc"): 400, (head, "renamed"): 5000, (base, "renamed"): 10000}
    asked: list[tuple[str, str]] = []

    def callgrind(module: Path, name: str, scale: float, function: str) -> int:
        asked.append((name, function))
        if function == bench_against.SPANS["run"]:
            return loop[(module, name)]
        return whole[(module, name)] if (module, name) in whole else 10 * loop[(module, name)]

    monkeypatch.setattr(bench_against, "child", child)
    monkeypatch.setattr(bench_against, "callgrind", callgrind)
    assert bench_against.against("HEAD~1", 1, 0.1, [], count="run", settle=0) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert "run instr." in out
    assert rows["aged"][6] == "0.9000x", "the event loops' counts"
    assert rows["atc"][6] == "0.7500x", "a stream scenario counted whole"
    assert rows["renamed"][6] == "-", "no ratio of unlike spans"
    assert {f for n, f in asked if n == "atc"} == {bench_against.SPANS["scenario"]}
    assert {f for n, f in asked if n == "aged"} == {bench_against.SPANS["run"]}
    asked.clear()
    assert bench_against.against("HEAD~1", 1, 0.1, [], count="scenario", settle=0) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert rows["aged"][6] == "0.9000x" and rows["renamed"][6] == "0.5000x" and rows["atc"][6] == "0.7500x"
    assert {f for _, f in asked} == {bench_against.SPANS["scenario"]}
