"""End to end: a short PPO self-play run beats the uniform-random rival beyond noise, and saves its outputs."""

import json

import numpy as np
import pytest
import torch

from agon_env.discrete import heuristic_policy
from baselines.sb3_ppo import Args, evaluate, snapshot, train, uniform_random


@pytest.mark.slow
def test_short_training_beats_random(tmp_path):
    torch.set_num_threads(1)
    # A step budget, not a time budget, so the run is the same on any machine (fixed seed, 1 thread).
    args = Args(seed=0, total_timesteps=50_000, time_budget_s=600, eval_every=10**9, curve_episodes=1000,
                eval_episodes=1000, out_dir=str(tmp_path), progress=False)
    metrics = train(args)
    before, after = metrics["curve"][0]["random"], metrics["final"]["random"]
    # An untrained greedy net already beats random a little (a constant answer hits the likeliest sum),
    # so the bar is the untrained score, plus 0.1 and at least three standard errors of the difference
    # (seen here: 0.48 untrained, 0.57 after 4k steps, 0.66 after 50k steps).
    se_after = (after["ci95"][1] - after["ci95"][0]) / (2 * 1.96)
    se_before = 0.5 / np.sqrt(args.curve_episodes)
    assert after["win_rate"] - before > max(0.1, 3 * np.hypot(se_after, se_before)), (before, after)
    assert after["ci95"][0] > 0.55, after
    run = next(tmp_path.iterdir())
    assert {"model.zip", "win_rate.png", "metrics.json"} <= {p.name for p in run.iterdir()}
    assert json.loads((run / "metrics.json").read_text())["final"]["random"] == after


def test_evaluate_scores_ties_as_half_and_orders_policies():
    args = Args()
    honest = heuristic_policy(args.n_digits, args.n_values, "combine")
    self_play = evaluate(honest, honest, args, 1000, seed=0)
    assert abs(self_play["win_rate"] - 0.5) < 0.05 and self_play["ties"] > self_play["wins"]
    strong = evaluate(honest, uniform_random(args), args, 1000, seed=0)
    assert strong["ci95"][0] > 0.6 and strong["wins"] + strong["ties"] + strong["losses"] == 1000


def test_snapshot_matches_the_sb3_policy():
    from stable_baselines3 import PPO

    from agon_env.single_agent import SingleAgentEnv

    model = PPO("MlpPolicy", SingleAgentEnv(uniform_random(Args())), seed=0, device="cpu")
    with torch.no_grad():  # a fresh head is nearly uniform (gain 0.01): make its preferences clear
        model.policy.action_net.weight.mul_(300.0)
    greedy, sampled = snapshot(model, greedy=True), snapshot(model)
    space = SingleAgentEnv(uniform_random(Args())).observation_space
    space.seed(0)
    observations = [space.sample() for _ in range(50)]
    for obs in observations:
        action, _ = model.predict(obs, deterministic=True)
        assert greedy(obs, np.random.default_rng(0)) == int(action)
    # the sampled snapshot draws from SB3's own action distribution
    obs, rng, n = observations[0], np.random.default_rng(0), 4000
    with torch.no_grad():
        want = model.policy.get_distribution(torch.as_tensor(obs)[None]).distribution.probs[0].numpy()
    assert want.max() < 0.9 and want.max() > 2 / len(want), want  # neither uniform nor all on one action
    freq = np.bincount([sampled(obs, rng) for _ in range(n)], minlength=len(want)) / n
    assert np.abs(freq - want).max() < 4 * np.sqrt(0.25 / n), (freq, want)
