"""Cascade inference: direction chosen on validation only, run loading, self-refinement."""

import json

import pytest
import torch

from agon_env.game import AgonGame
from agon_env.grading import ExactMatchGrader
from baselines.cascade import cascade_report
from baselines.config import EvalConfig
from baselines.runs import load_run, run_pair_dirs
from baselines.single_model import evaluate_self_cascade, evaluate_self_refine, refine_game
from problems.record import Problem

from .scripted import ScriptedPolicy, ans


def test_direction_is_chosen_on_validation_even_when_test_disagrees():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    validation = [Problem(id=f"v{i}", question=f"v{i}", answer="1") for i in range(5)]
    test = [Problem(id=f"t{i}", question=f"t{i}", answer="1") for i in range(5)]

    # Both draft wrongly. As answerer (prompt starts with the draft, "D:"), B is right only on
    # validation problems and A only on test ones: validation prefers A→B, test prefers B→A.
    def answerer(right_on):
        return lambda p: ans(1) if p.startswith("D:") and f"Q:{right_on}" in p else ans(0)

    a, b = ScriptedPolicy("A", answerer("t")), ScriptedPolicy("B", answerer("v"))
    report = cascade_report(a, b, validation, test, game, EvalConfig(samples=2, greedy=False), 1234)
    rows = {r["method"]: r for r in report["test"]}
    assert rows["B→A"]["pass@1"] == 1.0 and rows["A→B"]["pass@1"] == 0.0  # test would have chosen B→A
    assert report["direction"] == "A→B"
    assert report["chosen"]["method"] == "A→B" and report["chosen"]["pass@1"] == 0.0
    assert [r["pass@1"] for r in report["validation"]] == [1.0, 0.0]
    assert {r["method"] for r in report["test"]} == {"A", "B", "A→B", "B→A"}  # each model alone too


def test_validation_choice_is_made_before_any_test_prompt():
    """Spy on the order of prompts: every validation question is seen before any test one."""
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    validation = [Problem(id="v", question="v0", answer="1")]
    test = [Problem(id="t", question="t0", answer="1")]
    a, b = ScriptedPolicy("A", lambda p: ans(1)), ScriptedPolicy("B", lambda p: ans(0))
    cascade_report(a, b, validation, test, game, EvalConfig(samples=1, greedy=False), 1234)
    for pol in (a, b):
        kinds = ["t" if "Q:t" in p else "v" for p in pol.seen]
        assert kinds == sorted(kinds, key=lambda k: k == "t"), f"{pol.name} saw a test prompt before validation ended"
    assert any("Q:t" in p for p in a.seen) and any("Q:t" in p for p in b.seen)


def test_self_refine_shows_the_answer_and_self_cascade_withholds_it():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    problems = [Problem(id="p", question="2+2", answer="4")]
    draft = "<think>private</think>work shown" + ans(5)
    pol = ScriptedPolicy("M", lambda p: ans(4) if p.startswith("D:") else draft)
    refine = evaluate_self_refine(pol, problems, game, EvalConfig(samples=1, greedy=False), 1234)
    second = [p for p in pol.seen if p.startswith("D:")]
    assert second == ["D:work shown<answer>5</answer>\nQ:2+2\nA:"]  # thinking dropped, own answer kept
    assert refine["method"] == "M self-refine" and refine["pass@1"] == 1.0 and refine["conversion"] == 1.0
    pol.seen.clear()
    evaluate_self_cascade(pol, problems, game, EvalConfig(samples=1, greedy=False), 1234)
    assert [p for p in pol.seen if p.startswith("D:")] == ["D:work shown\nQ:2+2\nA:"]  # the challenger channel
    assert "earlier solution" in refine_game(AgonGame(grader=ExactMatchGrader())).challenger_prompts(problems, [draft])[0]


def _fake_run(tmp_path, steps, ckpt_step):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps({"steps": steps, "model": "tiny", "policy": "a", "seed": 0,
                                                      "lora_rank": 16}))
    (tmp_path / "metrics.jsonl").write_text("")
    (tmp_path / "checkpoint").mkdir()
    torch.save({"step": ckpt_step, "params": {}}, tmp_path / "checkpoint" / "state.pt")
    return tmp_path


def test_load_run_refuses_a_checkpoint_that_is_not_final(tmp_path):
    with pytest.raises(SystemExit, match="step 2 of 4"):
        load_run(_fake_run(tmp_path, steps=4, ckpt_step=2))


def test_load_run_names_a_missing_checkpoint(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"steps": 4}))
    with pytest.raises(SystemExit, match="no checkpoint/state.pt"):
        load_run(tmp_path)


def test_two_run_directories_are_a_pair_of_runs(tmp_path):
    a, b = _fake_run(tmp_path / "a", 4, 4), _fake_run(tmp_path / "b", 4, 4)
    assert run_pair_dirs(f"{a},{b}") == (str(a), str(b))
    assert run_pair_dirs(f"{a}") is None and run_pair_dirs(f"{a},{tmp_path}") is None and run_pair_dirs("tiny") is None


@pytest.mark.slow
def test_load_run_restores_the_trained_weights(tmp_path):
    from baselines import grpo
    from baselines.policy import SamplingParams, load_policy

    # Medium problems with room to finish: rewards vary within a group, so the update moves the weights.
    args = grpo.Args(steps=2, checkpoint_every=2, rollouts_per_problem=8, problems_per_step=2,
                     sampling=SamplingParams(max_new_tokens=64), train_tiers="medium",
                     eval=EvalConfig(problems=2, samples=1, max_new_tokens=64), eval_every=0, threads=1, progress=False,
                     lr=1e-3, out_dir=str(tmp_path), run_name="run")
    grpo.main(args)
    trained = load_run(tmp_path / "run", device="cpu", backend="hf")["GRPO"]
    saved = torch.load(tmp_path / "run" / "checkpoint" / "state.pt", weights_only=False)["params"]["policy"]
    untrained = load_policy("tiny:a", device="cpu", backend="hf", reference=False)
    assert all(torch.equal(p, s) for p, s in zip(trained.parameters(), saved))
    assert any(not torch.equal(p, u) for p, u in zip(trained.parameters(), untrained.parameters()))


@pytest.mark.parametrize("argv,greedy", [([], True), (["--eval.no-greedy"], False)])
def test_cli_reports_greedy_unless_told_not_to(tmp_path, monkeypatch, argv, greedy):
    from baselines import cascade

    seen = {}

    def stop(a, b, validation, test, game, cfg, seed):
        seen["greedy"] = cfg.greedy
        raise SystemExit(0)

    monkeypatch.setattr(cascade, "cascade_report", stop)
    with pytest.raises(SystemExit):
        cascade.main(cascade.Args.cli(["--eval.problems", "1", "--device", "cpu", "--backend", "hf",
                                       "--out-dir", str(tmp_path), *argv]))
    assert seen["greedy"] is greedy  # --eval.no-greedy was overridden to True


def test_single_model_prompts_code_problems_with_the_code_template(tmp_path, monkeypatch):
    from baselines import single_model

    pol = ScriptedPolicy("M", lambda p: ans(0))
    monkeypatch.setattr(single_model, "load_policy", lambda *a, **k: pol)
    single_model.main(single_model.Args(model="smollm2", problems="code_easy", out_dir=str(tmp_path),
                                        eval=EvalConfig(tier="all", problems=1, samples=1)))
    drafts = [p for p in pol.seen if p.startswith("Think")]
    assert drafts and all("Python 3 program" in p for p in drafts)  # was the math template's instructions
    assert any(p.startswith("Below is your own earlier solution") and "Python 3 program" in p for p in pol.seen)


@pytest.mark.parametrize("model", ["tiny", "tiny:a,tiny:b"])
def test_single_model_refuses_a_pair_naming_the_option(model):
    from baselines import single_model

    with pytest.raises(SystemExit, match="--model .* is a pair"):
        single_model.main(single_model.Args(model=model))


@pytest.mark.parametrize("argv, source, template", [([], "code_easy", "code"), (["--problems", "arith"], "arith", "default")])
def test_a_run_is_evaluated_on_its_own_problems_with_their_template(tmp_path, monkeypatch, argv, source, template):
    """A code run's cascade reads code problems through the code template; --problems arith, given, wins."""
    from baselines import cascade, runs
    from baselines.agon_grpo import Args as AgonArgs

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"problems": "code_easy", "model": "smollm2"}))
    (run_dir / "metrics.jsonl").write_text("")
    monkeypatch.setattr(runs, "run_args", lambda d: AgonArgs(problems="code_easy", model="smollm2"))
    monkeypatch.setattr(runs, "load_run", lambda *a: {"A": ScriptedPolicy("A", lambda p: ans(0)),
                                                      "B": ScriptedPolicy("B", lambda p: ans(0))})
    seen = {}

    def stop(a, b, validation, test, game, cfg, seed):
        seen.update(problems={p.domain for p in validation + test}, template=game.template.name)
        raise SystemExit(0)

    monkeypatch.setattr(cascade, "cascade_report", stop)
    with pytest.raises(SystemExit):
        cascade.main(cascade.Args.cli(["--model", str(run_dir), "--eval.problems", "1", "--eval.tier", "all",
                                       "--out-dir", str(tmp_path), *argv]))
    assert seen == {"problems": {"code" if source == "code_easy" else "math"}, "template": template}
