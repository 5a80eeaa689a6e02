"""`benchmarks.replicate`: choosing methods, the jobs that follow GRPO, the paired changes in the table, and
`--quick` end to end (GRPO, Agon and the GRPO pair cascade train or run, the table is written and rebuilds)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.replicate import Args, first_jobs, follow_ups, job_completions
from benchmarks.replicate_jobs import learner_args, run_rows
from benchmarks.replicate_table import GRPO_B, ORDER, PAIR_CONTROL, TRAINED, VARIANT, comparisons, credit_lines, seed_lines, table

ROOT = Path(__file__).resolve().parents[2]


def test_methods_choose_the_jobs_and_name_what_is_wrong():
    assert Args().selected() == [*TRAINED, PAIR_CONTROL]
    cfg = Args(methods="GRPO pair cascade, GRPO", seeds=2)
    assert cfg.selected() == ["GRPO", PAIR_CONTROL]
    jobs = first_jobs(cfg)
    assert sorted(j["id"] for j in jobs) == ["GRPO-s0", "GRPO-s1", "GRPO_B-s0", "GRPO_B-s1", "moa-s0", "moa-s1"]
    assert [j["method"] for j in jobs[:4]].count("GRPO") == 2  # the GRPO runs first: the follow-ups wait on them
    with pytest.raises(SystemExit, match="unknown \\['PPO'\\]"):
        Args(methods="GRPO,PPO").selected()
    with pytest.raises(SystemExit, match="add GRPO"):
        Args(methods="Agon,GRPO pair cascade").selected()


def test_the_pair_job_follows_both_grpo_runs_of_its_seed():
    cfg, runs = Args(methods="GRPO,GRPO pair cascade"), {}
    res = lambda m, s: {"kind": "train", "method": m, "seed": s, "run_dir": f"r/{m}{s}", "train_rollouts": 10,  # noqa: E731
                        "train_wall_s": 2.0}
    assert follow_ups(cfg, res(GRPO_B, 0), runs) == []
    [self_job, pair] = follow_ups(cfg, res("GRPO", 0), runs)
    assert (self_job["kind"], self_job["grpo_run"], self_job["log"]) == ("self", "r/GRPO0", "runs/replicate/self-s0.log")
    assert (pair["kind"], pair["grpo_runs"], pair["train_rollouts"], pair["train_wall_s"]) == \
        ("pair", ["r/GRPO0", "r/GRPO B0"], 20, 4.0)
    assert [j["kind"] for j in follow_ups(Args(methods="GRPO"), res("GRPO", 1), {})] == ["self"]
    b = learner_args(cfg, GRPO_B, 0)  # model B of the shipped pair, at GRPO's budget
    assert (b.policy, b.model, b.rollouts_per_problem, b.run_name) == ("b", "tiny", 16, "grpo-GRPO_B-s0")
    assert job_completions(cfg, {"kind": "pair"}) == (0, 8 * cfg.learner.eval.problems * cfg.learner.eval.samples)
    assert job_completions(cfg, {"kind": "train", "method": GRPO_B}) == job_completions(cfg, {"kind": "train", "method": "GRPO"})


def _row(name, per_problem):
    return {"method": name, "pass@1": sum(per_problem) / len(per_problem), "n": 2 * len(per_problem), "mean_length": 5.0,
            "per_problem": per_problem}


def test_run_rows_records_step_0_once_and_keeps_the_untrained_rows(tmp_path):
    before, after = _row("GRPO", [0.0, 0.5]), _row("GRPO", [0.5, 0.5])
    (tmp_path / "summary.json").write_text(json.dumps({"before": [before], "after": [after], "direction": None}))
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        {"step": 0, "eval/GRPO": 0.2, "eval_full/GRPO": 0.25}, {"step": 0, "pass": 0.3, "step_time": 1.0},
        {"step": 1, "pass": 0.3, "eval/GRPO": 0.3, "step_time": 1.0}, {"step": 2, "eval/GRPO": 0.4})))
    got = run_rows(Args(), "GRPO", tmp_path)
    assert got["curve"] == [(0, 0.2), (1, 0.3), (2, 0.4)]
    assert got["rows"] == {"zero-shot": before, "GRPO": after} and got["untrained"] == {"GRPO": before}
    assert got["train_wall_s"] == 2.0 and got["credit"] == {}  # GRPO logs no challenger credit


def test_credit_shares_are_read_from_the_steps_and_reported_per_method(tmp_path):
    before, after = _row("A→B", [0.0, 0.5]), _row("A→B", [0.5, 0.5])
    (tmp_path / "summary.json").write_text(json.dumps({"before": [before], "after": [after], "direction": "A→B"}))
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        {"step": 0, "credit/right_draft": 0.6, "read/right_draft": 0.4, "step_time": 1.0},
        {"step": 1, "credit/right_draft": 0.8, "read/right_draft": 0.5, "step_time": 1.0})))
    got = run_rows(Args(), VARIANT, tmp_path)
    assert got["credit"] == pytest.approx({"credit/right_draft": 0.7, "read/right_draft": 0.45})
    assert got["rows"] == {VARIANT: after} and got["untrained"] == {VARIANT: before}
    lines = credit_lines([{**got, "method": VARIANT}, {"method": "Agon", "credit": {"credit/right_draft": 0.5,
                                                                                   "read/right_draft": 0.25}}])
    assert lines == [f"Challenger credit, {VARIANT}: 70% of its positive advantage went to answers that read a right "
                     "draft, which were 45% of its answers (mean over steps and seeds).",
                     "Challenger credit, Agon: 50% of its positive advantage went to answers that read a right "
                     "draft, which were 25% of its answers (mean over steps and seeds)."]


def test_table_pools_paired_changes_over_seeds():
    results = []
    for seed in (0, 1):
        zero, grpo = _row("GRPO", [0.0, 0.5, 1.0]), _row("GRPO", [0.0, 0.5, 1.0])
        untrained, agon = _row("A→B", [0.0, 0.0, 0.5]), _row("A→B", [0.5, 0.5, 1.0])
        results += [
            {"kind": "train", "seed": seed, "rows": {"zero-shot": zero, "GRPO": grpo}, "untrained": {"GRPO": zero},
             "train_rollouts": 8, "train_wall_s": 1.0, "wall_s": 2.0, "direction": None},
            {"kind": "train", "seed": seed, "rows": {"Agon": agon, "cascade untrained": untrained},
             "untrained": {"Agon": untrained}, "train_rollouts": 8, "train_wall_s": 1.0, "wall_s": 2.0, "direction": "A→B"},
            {"kind": "pair", "seed": seed, "rows": {PAIR_CONTROL: agon}, "untrained": {PAIR_CONTROL: untrained},
             "train_rollouts": 16, "train_wall_s": 2.0, "wall_s": 3.0, "direction": "A→B"}]
    rows = {r["method"]: r for r in table(results, Args())}
    assert rows["GRPO"]["Δ vs untrained [paired 95% CI]"] == "+0.0 [+0.0, +0.0]"
    assert rows["Agon"]["Δ vs untrained [paired 95% CI]"].startswith("+50.0 [")
    assert rows["Agon"]["Δ per seed"] == "+50.0 / +50.0" and rows["zero-shot"]["Δ vs untrained [paired 95% CI]"] == ""
    assert (rows[PAIR_CONTROL]["train rollouts"], rows[PAIR_CONTROL]["total wall (s)"]) == (32, "10")  # both GRPO runs
    assert seed_lines(list(rows.values())) == [  # GRPO moved nothing; Agon +50 on every problem of both seeds
        "Seeds whose own paired 95% CI of Δ vs untrained lies above 0: GRPO 0 of 2 (lower bounds +0.00 / +0.00); "
        f"{PAIR_CONTROL} 2 of 2 (lower bounds +50.00 / +50.00); Agon 2 of 2 (lower bounds +50.00 / +50.00)."]
    text = "\n".join(comparisons(list(rows.values())))
    assert "Agon − GRPO: +16.7 points; paired per-problem 95% CI [" in text
    assert "What training added, Agon minus GRPO (each against its own models untrained, per problem): +50.0 [" in text


@pytest.mark.slow
def test_quick_replicate_writes_the_table(tmp_path):
    results, runs = tmp_path / "results", tmp_path / "runs"
    methods = ["GRPO", "Agon", PAIR_CONTROL]
    r = subprocess.run([sys.executable, "-m", "benchmarks.replicate", "--quick", "--methods", ",".join(methods),
                        "--results-dir", str(results), "--runs-dir", str(runs)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "estimated" in r.stdout and "actual" in r.stdout

    report = json.loads((results / "replicate_quick.json").read_text())
    rows = {row["method"]: row for row in report["rows"]}
    expected = ["zero-shot", "GRPO", "self-refinement", "GRPO two-pass self-cascade", "MoA untrained",
                "cascade untrained", PAIR_CONTROL, "Agon", "Agon: drafter alone"]
    assert list(rows) == [m for m in ORDER if m in expected]  # the chosen methods and what comes with them, in order
    md = (results / "replicate_quick.md").read_text()
    assert all(f"| {m} |" in md for m in expected) and (results / "replicate_quick_pass_at_1.png").stat().st_size > 0

    seeds = report["config"]["seeds"]
    parity = 2 * report["config"]["group_size"]
    for method in methods:  # equal rollout compute per trained model
        assert rows[method]["rollouts/problem/step"] == parity
        assert len(rows[method]["per seed"].split(" / ")) == seeds
        assert rows[method]["Δ vs untrained [paired 95% CI]"].count("[") == 1
    for row in rows.values():
        p, lo, hi = (float(x) for x in row["pass@1 % [95% CI]"].replace("[", "").replace("]", "").replace(",", "").split())
        assert 0 <= lo <= p <= hi <= 100

    # Agon's row is its cascade in the direction its learner chose on validation, read from the run itself.
    summary = json.loads((runs / "agon-Agon-s0" / "summary.json").read_text())
    assert rows["Agon"]["direction (validation)"] == summary["direction"]
    chosen = next(a for a in summary["after"] if a["method"] == summary["direction"])
    assert rows["Agon"]["per seed"] == f"{100 * chosen['pass@1']:.1f}"
    assert (runs / "self-s0.log").exists() and (runs / "moa-s0.log").exists()

    # The untrained cascade is Agon's pair before training, in the direction Agon chose.
    chosen_before = next(a for a in summary["before"] if a["method"] == summary["direction"])
    assert rows["cascade untrained"]["per seed"] == f"{100 * chosen_before['pass@1']:.1f}"

    # The control: model B trained by GRPO too, both GRPO runs' compute counted, and its untrained cascade is
    # the same pair before training that Agon's run evaluated (same problems and draws).
    b_config = json.loads((runs / "grpo-GRPO_B-s0" / "config.json").read_text())
    assert (b_config["policy"], b_config["steps"]) == ("b", report["config"]["learner"]["steps"])
    assert rows[PAIR_CONTROL]["train rollouts"] == 2 * rows["GRPO"]["train rollouts"]
    pair = next(res for res in report["results"] if res["kind"] == "pair")
    agon_before = next(a for a in summary["before"] if a["method"] == pair["direction"])
    assert pair["untrained"][PAIR_CONTROL]["per_problem"] == agon_before["per_problem"]

    # --from-results rebuilds the same table from the finished run, training nothing.
    r = subprocess.run([sys.executable, "-m", "benchmarks.replicate", "--from-results", str(results / "replicate_quick.json"),
                        "--results-dir", str(results)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "replicate:" not in r.stdout  # no jobs ran
    rebuilt = json.loads((results / "replicate_quick.json").read_text())
    assert rebuilt["rows"] == report["rows"] and "nothing was retrained" in rebuilt["notes"][-1]
