"""Tables: markdown formatting, trends and the end-of-run summary."""

import json

from baselines.config import LearnerArgs
from baselines.report import final_table, markdown_table, model_rows, trend


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
