"""`workbench search`: a seeded guided search that saves a candidate `propose` can cite."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from packets.candidates import resolve_config
from packets.examples import example_bytes
from packets.load import load_packet
from triage.scenario import build_scenario
from triage.search import config_of, refusal, run_search, search_space
from workbench.cli import main

NAME = "fusion-tiling-llama-decode"
ARGS = ("--trials", "24", "--seed", "7", "--requests", "2000")


def _copy(folder: Path, edits: tuple[tuple[bytes, bytes], ...] = ()) -> Path:
    raw = example_bytes(NAME)
    for old, new in edits:
        assert old in raw
        raw = raw.replace(old, new, 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{NAME}.yaml"
    path.write_bytes(raw)
    return path


def test_search_saves_the_best_with_provenance_and_is_deterministic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = _copy(tmp_path / "one"), _copy(tmp_path / "two")
    out = tmp_path / "trials.parquet"
    assert main(["search", str(one), *ARGS, "--save-as", "searched", "--parquet", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Pareto front (p99 against throughput)" in printed
    assert "saved candidate searched" in printed
    assert main(["search", str(two), *ARGS, "--save-as", "searched"]) == 0
    # Same seed, same candidate: the bytes differ only in the command's packet path.
    assert one.read_bytes().replace(str(one).encode(), str(two).encode()) == two.read_bytes()

    packet = load_packet(one).packet
    saved = next(c for c in packet.candidates if c.name == "searched")
    prov = saved.provenance
    assert prov is not None and (prov.objective, prov.trials, prov.seed) == ("p99", 24, 7)
    assert prov.command.startswith(f"workbench search {one} --trials 24 --seed 7")
    assert 1 <= len(prov.rejected) <= 5
    assert all(alt.tail.p99_ms >= 0 and alt.knobs for alt in prov.rejected)

    # The saved candidate is the search's best feasible trial, re-run exactly.
    trials = pl.read_parquet(out)
    assert trials.height == 24
    best = trials.filter(pl.col("sla_ok")).sort(["latency_p99_ms", "trial"]).row(0, named=True)
    assert main(["run", str(one), "--candidate", "searched", "--requests", "2000", "--json"]) == 0
    assert f'"p99": {best["latency_p99_ms"]}' in capsys.readouterr().out.replace("\n", " ")

    # propose cites the search's alternatives next to the packet's own candidates.
    assert main(["propose", str(one), "--candidate", "searched", "--rationale", "searched"]) == 0
    cited = [a.candidate for a in load_packet(one).packet.outputs.mitigation.rejected]
    assert [c for c in cited if c.startswith("searched/trial-")] == [
        f"searched/{a.candidate}" for a in prov.rejected
    ]
    assert main(["check", str(one)]) == 0


def test_search_with_no_trial_meeting_the_sla_saves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(tmp_path, ((b"p95_ms: 62.5", b"p95_ms: 2.0"), (b"p99_ms: 76.0", b"p99_ms: 3.0")))
    before = path.read_bytes()
    assert main(["search", str(path), "--trials", "8", "--requests", "1000", "--save-as", "x"]) == 1
    assert "none of 8 trials meets the SLA; nothing saved" in capsys.readouterr().out
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("name", "message"),
    [("standard-fusion", "already has a hand-made candidate"), ("Bad Name", "--save-as Bad Name")],
)
def test_search_refuses_a_name_it_cannot_save_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    path = _copy(tmp_path)
    before = path.read_bytes()
    capsys.readouterr()
    assert main(["search", str(path), *ARGS, "--save-as", name]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert path.read_bytes() == before


def test_the_model_refuses_a_tile_that_does_not_fit_sram(tmp_path: Path) -> None:
    loaded = load_packet(_copy(tmp_path))
    params = {name: choices[0] for name, choices in search_space(loaded).choices}
    params["tiles.qkv_proj"] = "4096x4096x4096"
    message = refusal(loaded, config_of(loaded.packet.baseline, params), build_scenario(loaded))
    assert message is not None and "qkv_proj" in message


def test_search_space_choices_all_pass_the_model_checks_one_by_one(tmp_path: Path) -> None:
    loaded = load_packet(_copy(tmp_path))
    baseline = build_scenario(loaded)
    base = loaded.packet.baseline
    for name, choices in search_space(loaded).choices:
        for value in choices:
            assert refusal(loaded, config_of(base, {name: value}), baseline) is None, (name, value)


def test_an_unknown_objective_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="objective must be one of"):
        run_search(load_packet(_copy(tmp_path)), 1, 0, "p50")


def test_the_search_starts_from_the_baseline_and_the_packets_candidates(tmp_path: Path) -> None:
    loaded = load_packet(_copy(tmp_path))
    result = run_search(loaded, 8, 0, "p99", requests=1000)
    assert result.trials[0].config == loaded.packet.baseline
    assert result.trials[1].config == resolve_config(loaded.packet, "standard-fusion")
    assert result.trials[2].config == resolve_config(loaded.packet, "aggressive-fusion")
