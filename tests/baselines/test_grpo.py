"""Single-model GRPO: a real fixed-seed learning effect, and code problems accepted."""

import json

import pytest

from baselines import grpo
from baselines.config import EvalConfig
from baselines.evaluate import evaluate_single
from baselines.policy import SamplingParams, load_policy
from baselines.update import make_optimizer

from .cli import cli


@pytest.mark.slow
def test_grpo_really_learns_with_a_fixed_seed():
    """20 real GRPO steps on 8 medium problems raise their sampled pass@1 well beyond noise.

    The easy tier is saturated by the warm start (~99%), so the run uses medium problems,
    where the tiny model starts near 45%: the effect is learning (fitting) those problems.
    """
    args = grpo.Args(lr=1e-4, steps=20, rollouts_per_problem=8, problems_per_step=4, threads=1, warmup_frac=0.0,
                     sampling=SamplingParams(max_new_tokens=64))
    args.seed_everything()
    train = args.load("train", "medium")[:8]
    policy = load_policy("tiny:a", reference=False, backend="hf")
    game = args.game(model_template=policy.template)
    opt, sched = make_optimizer(policy, args)
    ecfg = EvalConfig(samples=16, max_new_tokens=64, greedy=False)
    before = evaluate_single(policy, train, game, ecfg, 7)
    rewards = [grpo.grpo_step(s, args, game, train, policy, opt, sched)["reward/mean"] for s in range(args.steps)]
    after = evaluate_single(policy, train, game, ecfg, 7)
    # 128 trials each: a 15-point rise is well outside both 95% intervals' overlap by chance.
    assert after["pass@1"] - before["pass@1"] >= 0.15, (before["pass@1"], after["pass@1"])
    assert after["ci_low"] > before["pass@1"]
    assert sum(rewards[-5:]) / 5 > sum(rewards[:5]) / 5


@pytest.mark.slow
@pytest.mark.parametrize("module", ["baselines.agon_grpo", "baselines.grpo"])
def test_learners_accept_code_problems_unchanged(tmp_path, module):
    group = ("--group-size", "2") if module.endswith("agon_grpo") else ("--rollouts-per-problem", "2")
    r = cli(module, tmp_path, "--problems", "code_easy", "--train-tiers", "all", "--eval.tier", "all",
             "--steps", "2", *group, "--checkpoint-every", "0", "--warmup-frac", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "step_time" in r] == [0, 1]
    # each step logs the rate its own update used: half of --lr at step 0 of a 2-step warm-up, then all of it
    lr = json.loads((tmp_path / "run" / "config.json").read_text())["lr"]
    assert [r["lr"] for r in rows if "step_time" in r] == [lr / 2, lr]
