"""Mixture-of-Agents: every proposal reaches the aggregator, and its answer is what is graded."""

import re

import pytest

from agon_env.game import AgonGame
from agon_env.grading import ExactMatchGrader
from baselines.config import EvalConfig
from baselines.moa import MoAConfig, aggregate_prompt, evaluate_moa, moa_prompts
from problems.record import Problem

from .scripted import ScriptedPolicy, ans

PROBLEMS = [Problem(id=f"p{i}", question=f"{i}*7", answer=str(7 * i)) for i in range(1, 4)]


def proposer(name):
    """Wrong proposals that name their author and problem, with private thinking."""
    counter = iter(range(10**6))
    return ScriptedPolicy(name, lambda p: f"<think>secret</think>{name}{next(counter)} on {p.split(':')[-1]}" + ans(0))


def test_aggregate_prompt_shows_every_proposal_once_in_both_templates():
    props = ["first idea", "second idea", "third idea"]
    for template in ("default", "compact"):
        prompt = aggregate_prompt(template, "6*7", props)
        assert all(prompt.count(p) == 1 for p in props) and "6*7" in prompt
    assert "may be wrong" in aggregate_prompt("default", "6*7", props)  # the aggregate-and-synthesize instruction
    with pytest.raises(ValueError, match="no MoA aggregator prompt"):
        aggregate_prompt("nope", "q", props)


def test_moa_prompts_summarize_each_proposal():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    drafts = [["<think>hidden</think>try 1" + ans(41), "<think>hidden</think>try 2" + ans(43)]]
    shown = moa_prompts(game, PROBLEMS[:1], drafts, "with_answer")[0]
    assert shown == "D:try 1<answer>41</answer>\nD:try 2<answer>43</answer>\nQ:1*7\nA:"
    withheld = moa_prompts(game, PROBLEMS[:1], drafts, "paper")[0]
    assert "41" not in withheld and "try 1" in withheld and "hidden" not in withheld


def test_aggregator_reads_all_proposals_and_its_answer_is_graded():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    a, b = proposer("A"), proposer("B")

    def aggregate(prompt):  # right only if it was shown all four proposals, two from each model
        q = prompt.rsplit("Q:", 1)[1].split("\n")[0]
        ok = len(re.findall(r"^D:A\d+", prompt, re.M)) == 2 and len(re.findall(r"^D:B\d+", prompt, re.M)) == 2
        return ans(eval(q) if ok else -1)

    agg = ScriptedPolicy("AGG", lambda p: aggregate(p) if p.startswith("D:") else a.answer(p))
    row = evaluate_moa({"A": agg, "B": b}, PROBLEMS, game, MoAConfig(proposers="a,b", k=4), EvalConfig(samples=2), 1234)
    assert row["pass@1"] == 1.0 and row["n"] == len(PROBLEMS) * 2
    assert row["proposal_pass"] == 0.0 and row["any_proposal_right"] == 0.0
    final_prompts = [p for p in agg.seen if p.startswith("D:")]
    assert len(final_prompts) == len(PROBLEMS) * 2
    assert all("secret" not in p for p in final_prompts)  # thinking is dropped from what the aggregator reads


def test_self_moa_and_layers():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    a, b = proposer("A"), proposer("B")
    row = evaluate_moa({"A": a, "B": b}, PROBLEMS, game, MoAConfig(proposers="a", k=3, layers=2, aggregator="b"),
                       EvalConfig(samples=1), 1234)
    assert len(b.seen) == len(PROBLEMS) and all(p.startswith("D:") for p in b.seen)  # B only aggregates
    layer2 = [p for p in a.seen if p.startswith("D:")]
    assert len(layer2) == len(PROBLEMS) and all(p.count("D:A") == 3 for p in layer2)  # layer 2 reads layer 1
    assert row["calls_per_answer"] == 7 and row["pass@1"] == 0.0


@pytest.mark.parametrize("bad,msg", [(dict(proposers="a,c"), "--proposers"), (dict(k=1), "--k"),
                                     (dict(aggregator="z"), "--aggregator"), (dict(layers=0), "--layers")])
def test_bad_config_names_the_option(bad, msg):
    with pytest.raises(SystemExit, match=msg):
        MoAConfig(**bad).validate()


def test_cli_rejects_an_unknown_summary_mode_naming_the_choices():
    import subprocess
    import sys

    from .cli import ROOT

    r = subprocess.run([sys.executable, "-m", "baselines.moa", "--show", "all"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "--show" in r.stderr and "with_answer" in r.stderr


def test_per_problem_has_one_mean_per_problem_over_its_runs():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    agg = ScriptedPolicy("A", lambda p: ans(7) if p.startswith("D:") and p.endswith("Q:1*7\nA:") else ans(0))
    row = evaluate_moa({"A": agg, "B": agg}, PROBLEMS, game, MoAConfig(), EvalConfig(samples=4), 0)
    assert row["per_problem"] == [1.0, 0.0, 0.0] and row["n"] == 12  # was one entry per run: 12, not 3


def test_code_problems_without_an_aggregator_prompt_fail_before_any_generation(tmp_path, monkeypatch):
    from baselines import moa
    from baselines.config import LearnerArgs

    models = {n: ScriptedPolicy(n, lambda p: ans(0)) for n in "AB"}
    run = LearnerArgs(problems="code_easy", eval=EvalConfig(tier="all", problems=1, samples=1))
    monkeypatch.setattr(moa, "load_models", lambda args: (models, lambda domain: run.game(domain), run))
    with pytest.raises(SystemExit, match="no MoA aggregator prompt for template 'code'"):
        moa.main(moa.Args(out_dir=str(tmp_path)))
    assert models["A"].seen == [] and models["B"].seen == []


def test_proposal_rates_count_right_proposals_per_run():
    """proposal_pass is the share of right proposals; any_proposal_right the share of runs with at least one."""
    game = AgonGame(template="compact", grader=ExactMatchGrader())

    def right_on(*questions):
        def answer(prompt):
            q = prompt.rsplit("Q:", 1)[1].split("\n")[0]
            return ans(eval(q) if q in questions else 0)
        return answer

    a, b = ScriptedPolicy("A", right_on("1*7", "2*7")), ScriptedPolicy("B", right_on("1*7"))
    row = evaluate_moa({"A": a, "B": b}, PROBLEMS, game, MoAConfig(proposers="a,b", k=4), EvalConfig(samples=1), 0)
    # proposals right: problem 1: 4 of 4, problem 2: A's 2 of 4, problem 3: none
    assert row["proposal_pass"] == pytest.approx(6 / 12)
    assert row["any_proposal_right"] == pytest.approx(2 / 3)
    assert row["pass@1"] == pytest.approx(2 / 3)  # the aggregator (A) is right on problems 1 and 2
