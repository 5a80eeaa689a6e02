"""The single-agent Gymnasium wrapper: API checkers, roles, and reward attribution in both roles."""

import pickle
import re

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from agon_env import rules
from agon_env.discrete import Layout, heuristic_policy, random_policy
from agon_env.single_agent import SingleAgentEnv

N_ACTIONS = Layout(2, 4).n_actions


@pytest.mark.parametrize("role", ["drafter", "challenger", "both"])
def test_checkers(role):
    check_env(SingleAgentEnv(random_policy(N_ACTIONS), role=role), skip_render_check=True)
    sb3_check_env(SingleAgentEnv(random_policy(N_ACTIONS), role=role))


def _run(env, policy, episodes, seed):
    """Episode returns and final infos of `policy` in the wrapper."""
    rng, out = np.random.default_rng(seed), []
    obs, info = env.reset(seed=seed)
    for _ in range(episodes):
        total, done = 0.0, False
        while not done:
            obs, r, done, trunc, info = env.step(policy(obs, rng))
            total += r
        out.append((total, info))
        obs, _ = env.reset()
    return out


@pytest.mark.parametrize("role", ["drafter", "challenger"])
def test_learner_is_paid_what_the_env_pays_in_both_roles(role):
    env = SingleAgentEnv(heuristic_policy(reader="combine"), role=role)
    runs = _run(env, heuristic_policy(reader="combine"), 400, seed=0)
    for ret, info in runs:
        assert info["role"] == role
        assert ret == info["reward"]  # the env's own payment to this agent
        c_me, c_rival = info["correct"], info["correct"] != (info["winner"] is not None)
        if role == "drafter":
            assert ret == rules.drafter_reward_for("agon", c_me, c_rival, info["formatted"])
        else:
            assert ret == rules.challenger_reward("agon", c_rival, c_me, info["formatted"])
    # The drafter's pay arrives after its last action; a wrapper that drops it would return 0 here.
    assert np.mean([r for r, _ in runs]) > 1.0


def test_both_roles_alternate_from_a_seeded_reset():
    env = SingleAgentEnv(random_policy(N_ACTIONS), role="both")
    roles = [env.reset(seed=4)[1]["role"]] + [env.reset()[1]["role"] for _ in range(3)]
    assert roles == ["drafter", "challenger"] * 2
    assert env.reset(seed=5)[1]["role"] == "challenger"  # the env's rule: the seed's parity
    assert [env.reset(seed=s)[1]["role"] for s in range(4)] == ["drafter", "challenger"] * 2


def test_the_rotation_rule_is_drafter_seat(monkeypatch):
    monkeypatch.setattr("agon_env._aec.drafter_seat", lambda turn, fixed=False: 1)
    env = SingleAgentEnv(random_policy(N_ACTIONS), role="both")
    assert {env.reset(seed=s)[1]["role"] for s in range(4)} == {"challenger"}


def test_failed_reset_changes_nothing():
    env = SingleAgentEnv(random_policy(N_ACTIONS), role="both")
    env.reset(seed=3)
    before = (env.np_random.bit_generator.state, env.env.np_random.bit_generator.state, env.env.drafter)
    for bad in ({"seed": -1}, {"seed": "x"}, {"options": "drafter"}, {"seed": 8, "options": {"drafter": "judge"}}):
        with pytest.raises((TypeError, ValueError)):
            env.reset(**bad)
        assert (env.np_random.bit_generator.state, env.env.np_random.bit_generator.state, env.env.drafter) == before


def test_rival_pool_is_sampled_per_episode():
    calls = {"a": 0, "b": 0}

    def counting(name):
        def act(obs, rng):
            calls[name] += 1
            return 0
        return act

    env = SingleAgentEnv([counting("a"), counting("b")], role="challenger")
    per_episode = []
    env.reset(seed=0)
    for _ in range(100):  # the rival drafts (several actions each episode): one rival plays all of them
        before = dict(calls)
        env.reset()
        per_episode.append({k for k in calls if calls[k] > before[k]})
    assert all(len(who) == 1 for who in per_episode), per_episode
    assert calls["a"] > 50 and calls["b"] > 50
    assert 20 < sum(who == {"a"} for who in per_episode) < 80


@pytest.mark.parametrize("action", [2.9, "3", np.array(2.5), [1], N_ACTIONS, -1, None])
def test_step_refuses_what_the_action_space_does_not_contain(action):
    env = SingleAgentEnv(random_policy(N_ACTIONS), role="drafter")
    env.reset(seed=0)
    before = env.env.draft.copy(), env.env.step_index
    with pytest.raises(ValueError, match=rf"action must be in Discrete\({N_ACTIONS}\), got {re.escape(repr(action))}"):
        env.step(action)
    assert (env.env.draft.tolist(), env.env.step_index) == (before[0].tolist(), before[1])


@pytest.mark.parametrize("action", [np.array(2), np.int64(2), 2])
def test_step_takes_integer_numpy_actions(action):
    env = SingleAgentEnv(random_policy(N_ACTIONS), role="drafter")
    env.reset(seed=0)
    env.step(action)
    assert env.env.draft[0] == 2


def test_step_before_reset_says_to_reset():
    with pytest.raises(RuntimeError, match="call reset\\(\\) before step\\(\\)"):
        SingleAgentEnv(random_policy(N_ACTIONS)).step(0)


def test_a_rival_that_raises_during_reset_changes_nothing():
    broken = {"on": False}

    def rival(obs, rng):
        if broken["on"]:
            raise RuntimeError("rival down")
        return int(rng.integers(N_ACTIONS))

    env = SingleAgentEnv(rival, role="challenger")  # the rival drafts, so it acts inside reset
    env.reset(seed=3)
    state = lambda: pickle.dumps((env.np_random.bit_generator.state, {k: v for k, v in vars(env.env).items()  # noqa: E731
                                                                      if not k.startswith(("_obs", "_act"))}))
    before = state()
    broken["on"] = True
    for seed in (None, 8):
        with pytest.raises(RuntimeError, match="rival down"):
            env.reset(seed=seed)
        assert state() == before
    fresh = SingleAgentEnv(rival)
    with pytest.raises(RuntimeError, match="rival down"):
        fresh.reset(seed=1)  # model_b drafts after an odd seed
    with pytest.raises(RuntimeError, match="call reset"):
        fresh.step(0)
    broken["on"] = False
    assert env.step(0)[2]  # the episode that was running goes on: the challenger's one step ends it


def test_errors():
    with pytest.raises(ValueError, match="role must be one of"):
        SingleAgentEnv(random_policy(N_ACTIONS), role="judge")
    with pytest.raises(TypeError, match="rival must be a callable"):
        SingleAgentEnv("not a policy")
    with pytest.raises(ValueError, match="role='both' needs the env's alternating roles"):
        SingleAgentEnv(random_policy(N_ACTIONS), role="both", roles="fixed")
    env = SingleAgentEnv(random_policy(N_ACTIONS), role="challenger")
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(0)
