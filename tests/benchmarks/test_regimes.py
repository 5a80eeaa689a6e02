"""The regimes benchmark: every arm parses, a real tiny arm trains and reads back, a mismatched rebuild refuses."""

import json

import pytest

from benchmarks import regimes

TINY = ("a 2-step smoke arm", "--lr 1e-4 --lr-schedule constant --steps 2 --problems-per-step 2 --rollouts-per-problem 2 "
        "--eval.problems 4 --eval.samples 1 --eval.max-new-tokens 24 --sampling.max-new-tokens 24 --threads 1")


def test_every_arm_parses_with_its_own_settings():
    for name, (_, flags) in regimes.ARMS.items():
        a = regimes.arm_args(name, "unused")
        assert a.eval.split == "validation" and a.train_tiers == "hard" and a.run_name == name
        if "--lr " in flags:  # the arm's own flags win over the common ones
            assert a.lr == float(flags.split("--lr ")[1].split()[0])
    assert regimes.arm_args("lr3e-4_fmt0", "x").format_weight == 0.0
    assert regimes.arm_args("c1e-4_p16g16", "x").rollouts_per_problem == 16


def test_tiny_arm_trains_reads_back_and_rebuild_checks_settings(tmp_path, monkeypatch):
    monkeypatch.setitem(regimes.ARMS, "tiny", TINY)
    out = str(tmp_path / "runs")
    rows = regimes.main(["--arms", "tiny", "--out-dir", out, "--results-dir", str(tmp_path), "--note", "hello"])
    report = json.loads((tmp_path / "regimes.json").read_text())
    (r,) = rows
    assert r["ci_low"] <= r["delta"] <= r["ci_high"]
    assert r["delta"] == pytest.approx((r["pass@1 after"] - r["pass@1 before"]) / 100, abs=1.1e-3)
    assert report["rows"][0]["arm"] == "tiny" and "hello" in report["notes"]
    assert (tmp_path / "regimes.png").stat().st_size > 0
    assert regimes.main(["--arms", "tiny", "--from-runs", out, "--results-dir", str(tmp_path)])[0]["delta"] == r["delta"]
    monkeypatch.setitem(regimes.ARMS, "tiny", (TINY[0], TINY[1].replace("--lr 1e-4", "--lr 2e-4")))
    with pytest.raises(SystemExit, match="lr"):
        regimes.main(["--arms", "tiny", "--from-runs", out, "--results-dir", str(tmp_path)])


def test_unknown_arm_is_named():
    with pytest.raises(SystemExit, match="nonsense"):
        regimes.main(["--arms", "nonsense"])
