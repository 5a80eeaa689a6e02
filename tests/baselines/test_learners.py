"""The learners: reward plumbing, role swaps, both policies updating, resume, CLI, learning."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from agon_env.game import AgonGame
from agon_env.grading import ExactMatchGrader
from baselines import agon_grpo, grpo
from baselines.common import batch_for_step, load_split, make_optimizer, seed_everything
from baselines.evaluate import EvalConfig, evaluate_single
from baselines.grpo_loss import group_advantages
from baselines.policy import load_pair, load_policy
from problems.record import Problem

ROOT = Path(__file__).resolve().parents[2]
TINY = dict(max_new_tokens=48, eval_problems=8, eval_samples=1, eval_every=0, progress=False, threads=1,
            problems_per_step=2, group_size=4)


def test_conversion_bonus_reaches_challenger_and_groups_are_own():
    game = AgonGame(grader=ExactMatchGrader())
    p1, p2 = Problem(id="1", question="q1", answer="1"), Problem(id="2", question="q2", answer="2")
    ans = lambda x: f"<answer>{x}</answer>"  # noqa: E731
    reps = [p1, p1, p2, p2]
    drafts = [ans(0), ans(1), ans(2), ans(2)]   # group 1: wrong, right; group 2: right, right
    responses = [ans(1), ans(1), ans(2), ans(0)]  # converts the wrong draft; keeps; keeps; misses
    own = game.score(reps, drafts, responses)
    r_d, r_c = agon_grpo.group_rewards([g.drafter_reward for g in own], own, 2, 2)
    assert r_c.tolist() == [[3.5, 2.5], [2.5, 0.5]]  # 2c + bonus + λφ: the bonus only for the conversion
    assert r_d.tolist() == [[0.5, 2.5], [2.5, 2.5]]
    adv_c = group_advantages(r_c)
    assert adv_c[0, 0] > 0 and torch.allclose(adv_c.sum(-1), torch.zeros(2), atol=1e-5)  # centred per own group
    assert torch.equal(group_advantages(r_d)[1], torch.zeros(2))  # the drafter's all-right group: no signal
    coop = AgonGame(reward="cooperative", grader=ExactMatchGrader()).score(reps, drafts, responses)
    assert agon_grpo.group_rewards([0.0] * 4, coop, 2, 2)[1][0].tolist() == [2.5, 2.5]  # no bonus: no gradient


def test_batch_for_step_is_a_function_of_the_step():
    ps = [Problem(id=str(i), question=f"q{i}", answer="1") for i in range(7)]
    a = [batch_for_step(ps, s, 3, seed=5) for s in range(5)]
    assert a == [batch_for_step(ps, s, 3, seed=5) for s in range(5)]
    first_epoch = [p.id for b in a for p in b][:7]
    assert sorted(first_epoch) == sorted(p.id for p in ps)


@pytest.fixture(scope="module")
def pair_setup():
    args = agon_grpo.Args(**{**TINY, "group_size": 8, "problems_per_step": 8})  # at T=0.7 most groups are all-right or all-wrong
    seed_everything(0, 1)
    game = args.game()
    train = load_split(args, "train", args.train_tiers)
    a, b = load_pair("tiny", reference=False, backend="hf")
    return args, game, train, {"A": a, "B": b}


def test_roles_swap_and_both_policies_update_every_step(pair_setup):
    args, game, train, pols = pair_setup
    opts, scheds = {}, {}
    for k, p in pols.items():
        opts[k], scheds[k] = make_optimizer(p, replace(args, steps=4))
    drafters = []
    for step in range(3):
        before = {k: [t.detach().clone() for t in p.parameters()] for k, p in pols.items()}
        m = agon_grpo.agon_step(step, args, game, train, pols, opts, scheds)
        drafters.append(m["drafter"])
        for k, p in pols.items():
            changed = any(not torch.equal(x, y) for x, y in zip(before[k], p.parameters()))
            assert changed, f"policy {k} did not change at step {step}"
    assert drafters == ["A", "B", "A"]
    fixed = replace(args, fixed_roles=True)
    assert [agon_grpo.agon_step(s, fixed, game, train, pols, opts, scheds)["drafter"] for s in range(2)] == ["A", "A"]


def _cli(module, out, *extra, wait=True):
    cmd = [sys.executable, "-m", module, "--out-dir", str(out), "--run-name", "run", "--no-progress",
           "--threads", "1", "--max-new-tokens", "48", "--eval-problems", "8", "--eval-samples", "1",
           "--problems-per-step", "2", "--eval-every", "0", *extra]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _metrics(run_dir):
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in ("step_time",)} for r in rows]


@pytest.mark.slow
def test_resume_after_kill_matches_uninterrupted(tmp_path):
    common = ("--steps", "8", "--group-size", "4", "--checkpoint-every", "2")
    full = _cli("baselines.agon_grpo", tmp_path / "full", *common)
    assert full.returncode == 0, full.stderr[-2000:]
    proc = _cli("baselines.agon_grpo", tmp_path / "killed", *common, wait=False)
    ckpt = tmp_path / "killed" / "run" / "checkpoint" / "state.pt"
    deadline = time.time() + 300
    while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "killed" / "run" / "summary.json").exists(), "the run finished before it could be killed"
    resumed = subprocess.run([sys.executable, "-m", "baselines.agon_grpo", "--resume", str(tmp_path / "killed" / "run"),
                              "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed" in resumed.stdout
    assert _metrics(tmp_path / "killed" / "run") == _metrics(tmp_path / "full" / "run")


@pytest.mark.slow
def test_cli_end_to_end_outputs(tmp_path):
    r = _cli("baselines.agon_grpo", tmp_path, "--steps", "2", "--group-size", "2", "--checkpoint-every", "0")
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "run"
    for f in ("metrics.jsonl", "summary.md", "summary.json", "win_rates.png", "rewards.png", "heldout.png", "config.json"):
        assert (run / f).exists(), f
    assert any(p.name.startswith("events") for p in (run / "tb").iterdir())
    assert f"outputs in {run}" in r.stdout and "(chosen on validation)" in r.stdout
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["step"] == 0 and "eval/A→B" in rows[0]  # the before-training evaluation
    rows = [r for r in rows if "step_time" in r]
    for key in ("win/A", "win/B", "conversion", "keep", "reward/A_drafter_mean", "length/drafter",
                "zero_std/challenger", "clip_frac", "kl", "step_time"):
        assert key in rows[0], key
    summary = json.loads((run / "summary.json").read_text())
    assert [r["method"] for r in summary["after"]] == ["A", "B", "A→B", "B→A"]


def test_help_lists_every_option():
    for mod, flags in (("baselines.agon_grpo", ("--fixed-roles", "--shared-opponent", "--reward", "--resume")),
                       ("baselines.grpo", ("--rollouts-per-problem", "--dynamic-sampling", "--loss-type"))):
        out = subprocess.run([sys.executable, "-m", mod, "--help"], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 0
        for f in flags:
            assert f in out.stdout, (mod, f)


@pytest.mark.parametrize("extra, msg", [
    (("--model", "/no/such/model"), "--model '/no/such/model'"),
    (("--group-size", "1"), "--group-size must be at least 2"),
    (("--reward", "bogus"), "--reward must be one of"),
])
def test_bad_config_fails_before_any_work(tmp_path, extra, msg):
    t = time.time()
    r = _cli("baselines.agon_grpo", tmp_path, *extra)
    assert r.returncode != 0 and msg in r.stderr
    assert not (tmp_path / "run").exists()  # nothing was written
    assert time.time() - t < 60


@pytest.mark.slow
def test_grpo_really_learns_with_a_fixed_seed():
    """20 real GRPO steps on 8 medium problems raise their sampled pass@1 well beyond noise.

    The easy tier is saturated by the warm start (~99%), so the run uses medium problems,
    where the tiny model starts near 45%: the effect is learning (fitting) those problems.
    """
    args = grpo.Args(lr=1e-4, steps=20, rollouts_per_problem=8, problems_per_step=4, max_new_tokens=64, threads=1,
                     warmup_frac=0.0)
    seed_everything(0, 1)
    train = load_split(args, "train", "medium")[:8]
    game = args.game()
    policy = load_policy("tiny:a", reference=False, backend="hf")
    opt, sched = make_optimizer(policy, args)
    ecfg = EvalConfig(samples=16, max_new_tokens=64, greedy=False, seed=7)
    before = evaluate_single(policy, train, game, ecfg)
    rewards = [grpo.grpo_step(s, args, game, train, policy, opt, sched)["reward/mean"] for s in range(args.steps)]
    after = evaluate_single(policy, train, game, ecfg)
    # 128 trials each: a 15-point rise is well outside both 95% intervals' overlap by chance.
    assert after["pass@1"] - before["pass@1"] >= 0.15, (before["pass@1"], after["pass@1"])
    assert after["ci_low"] > before["pass@1"]
    assert sum(rewards[-5:]) / 5 > sum(rewards[:5]) / 5


@pytest.mark.slow
@pytest.mark.parametrize("module", ["baselines.agon_grpo", "baselines.grpo"])
def test_learners_accept_code_problems_unchanged(tmp_path, module):
    group = ("--group-size", "2") if module.endswith("agon_grpo") else ("--rollouts-per-problem", "2")
    r = _cli(module, tmp_path, "--problems", "code_easy", "--train-tiers", "all", "--eval-tier", "all",
             "--steps", "1", *group, "--checkpoint-every", "0")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "step_time" in r] == [0]
