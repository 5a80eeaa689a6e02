"""Tables: markdown formatting, trends and the end-of-run summary."""

import json

import pytest

from baselines.config import LearnerArgs
from baselines.report import final_table, markdown_table, model_rows, slice_rows, trend


def test_markdown_table_formats_floats_and_fills_missing_cells():
    md = markdown_table([{"a": 1.23456, "b": "x"}, {"a": 2, "c": 3}])
    assert md.splitlines() == ["| a | b | c |", "|---|---|---|", "| 1.235 | x |  |", "| 2 |  | 3 |"]


def test_trend_compares_first_and_last_quarter():
    hist = [{"step": i, "win/A": float(i >= 4)} for i in range(8)] + [{"step": 8, "other": 1}]
    assert trend(hist, "win/A") == (0.0, 1.0)
    assert trend(hist[:3], "win/A") is None  # too short to say


def row(name, p, **kw):
    return {"method": name, "pass@1": p, "ci_low": p - 0.1, "ci_high": p + 0.1, "n": 10, "mean_length": 5.0,
            "greedy": p, **kw}


def test_final_table_marks_the_chosen_direction_and_writes_both_files(tmp_path):
    before = [row("A", 0.2), row("A→B", 0.3, conversion=0.1, keep=0.5)]
    after = [row("A", 0.4), row("A→B", 0.5, conversion=0.2, keep=0.6)]
    s = final_table(tmp_path, "agon_grpo", LearnerArgs(), before, after, "A→B", [], 12.0)
    md = (tmp_path / "summary.md").read_text()
    assert "A→B (chosen on validation)" in md and "20.0 [10.0, 30.0]" in md and "40.0 [30.0, 50.0]" in md
    assert "0.20 / 0.60" in md and json.loads((tmp_path / "summary.json").read_text())["direction"] == "A→B"
    assert s["args"]["eval"]["tier"] == "hard"
    assert model_rows(after, "eval/") == {"eval/A": 0.4, "eval/A_len": 5.0, "eval/A→B": 0.5, "eval/A→B_len": 5.0}


def test_final_table_shows_the_paired_change_and_a_falling_training_reward(tmp_path):
    before = [row("GRPO", 0.25, per_problem=[0.0, 0.5, 0.5, 0.0] * 25)]
    after = [row("GRPO", 0.35, per_problem=[0.1, 0.6, 0.6, 0.1] * 25)]
    history = [{"step": i, "pass": 0.3 - 0.01 * i, "reward/mean": 0.8, "step_time": 0.5} for i in range(8)]
    history.append({"step": 8, "eval/GRPO": 0.35})  # an evaluation point: no step time
    s = final_table(tmp_path, "grpo", LearnerArgs(), before, after, None, history, 9.0)
    md = (tmp_path / "summary.md").read_text()
    assert "9 s wall, 4 s of it in training steps" in md and s["train_s"] == pytest.approx(4.0)
    assert "Δ pass@1 [paired 95% CI]" in md and "| +10.0 [+10.0, +10.0] |" in md  # every problem moved the same way
    assert "paired bootstrap interval that resamples problems" in md
    assert "pass: 0.295 in the first quarter of steps → 0.235 in the last" in md
    assert "warning: the training pass rate (pass) fell from 0.295 to 0.235" in md and "--beta" in md
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["deltas"]["GRPO"]["delta"] == s["deltas"]["GRPO"]["delta"] == pytest.approx(0.1)
    assert saved["after"][0]["per_problem"] == after[0]["per_problem"]
    assert model_rows(after, "eval/") == {"eval/GRPO": 0.35, "eval/GRPO_len": 5.0}  # no per-problem list in metrics
    rising = [{"step": i, "pass/drafter": 0.1 * i} for i in range(8)]
    final_table(tmp_path, "agon_grpo", LearnerArgs(), before, after, None, rising, 1.0)
    assert "warning" not in (tmp_path / "summary.md").read_text()


def test_slice_rows_reads_the_first_problems_and_names_a_short_row():
    rows = [row("A", 0.5, per_problem=[1.0, 0.0, 0.5, 1.0])]
    assert slice_rows(rows, 2, "eval/") == {"eval/A": 0.5} and slice_rows(rows, 4, "eval/") == {"eval/A": 0.625}
    with pytest.raises(ValueError, match="'A' has 4 per-problem results, needs 5"):
        slice_rows(rows, 5, "eval/")


def test_final_table_counts_the_problems_evaluated_not_the_ones_asked_for(tmp_path):
    args = LearnerArgs()
    args.eval.problems = 1000  # the hard test split holds 600
    r = row("GRPO", 0.3, n=2400, per_problem=[0.3] * 600)
    final_table(tmp_path, "grpo", args, [r], [r], None, [], 1.0)
    assert "2400 samples per row (600 problems × 4)" in (tmp_path / "summary.md").read_text()
