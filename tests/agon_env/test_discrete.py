"""The discrete Agon variant: PettingZoo API, rules reuse, the summary channel, roles, and the draft's value."""

import pickle

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

from agon_env import discrete, rules
from agon_env.discrete import AGENTS, heuristic_policy, play, random_policy

LAYOUT = discrete.Layout(2, 4)  # the defaults: answers 0..6, action 7 is "no answer"
N_ACTIONS = LAYOUT.n_actions


def test_pettingzoo_api():
    api_test(discrete.env(), num_cycles=300)


def test_seed():
    seed_test(discrete.env, num_cycles=300)


def test_parallel_api_and_seed():
    parallel_api_test(discrete.parallel_env(), num_cycles=300)
    parallel_seed_test(discrete.parallel_env)


def _episodes(n, policies, seed=0, **env_kwargs):
    e, rng = discrete.raw_env(**env_kwargs), np.random.default_rng(seed)
    e.reset(seed=seed)
    return [play(e, policies, rng) for _ in range(n)]


@pytest.mark.parametrize("scheme", rules.REWARD_SCHEMES)
def test_rewards_are_the_rules(scheme):
    for infos in _episodes(300, {a: random_policy(N_ACTIONS) for a in AGENTS}, reward=scheme):
        d, c = sorted(infos.values(), key=lambda i: i["role"] != "drafter")
        assert d["reward"] == rules.drafter_reward_for(scheme, d["correct"], c["correct"], d["formatted"])
        assert c["reward"] == rules.challenger_reward(scheme, d["correct"], c["correct"], c["formatted"])
        assert d["formatted"] == (d["answer"] != LAYOUT.no_answer) and d["correct"] == (d["answer"] == d["target"])


def test_env_calls_rules_instead_of_copying_them(monkeypatch):
    monkeypatch.setattr(rules, "challenger_reward", lambda *a, **k: 42.0)
    monkeypatch.setattr(rules, "drafter_reward_for", lambda *a, **k: -7.0)
    infos = _episodes(1, {a: random_policy(N_ACTIONS) for a in AGENTS})[0]
    assert sorted(i["reward"] for i in infos.values()) == [-7.0, 42.0]
    # winner and conversion are GameResult's, not recomputed here
    monkeypatch.setattr(rules.GameResult, "winner", property(lambda r: "challenger"))
    monkeypatch.setattr(rules.GameResult, "converted", property(lambda r: "from GameResult"))
    e = discrete.raw_env()
    infos = play(e, {a: random_policy(N_ACTIONS) for a in AGENTS}, np.random.default_rng(0), seed=0)
    assert {i["winner"] for i in infos.values()} == {e.challenger}
    assert {i["converted"] for i in infos.values()} == {"from GameResult"}


def _challenger_obs(drafter_answer):
    e = discrete.raw_env()
    e.reset(seed=3, options={"drafter": "model_a"})
    for token in (1, 2):
        e.step(token)
    e.step(drafter_answer)
    return e.observe("model_b")


def test_challenger_never_sees_the_drafters_answer():
    obs = [_challenger_obs(a) for a in range(N_ACTIONS)]
    assert all(np.array_equal(obs[0], o) for o in obs[1:])
    lay = LAYOUT
    phase, _, draft = lay.decode(obs[0])
    assert (phase, list(draft)) == (lay.answer_phase, [1, 2])


def test_roles_alternate_fixed_and_pinned():
    e = discrete.raw_env()
    e.reset(seed=0)
    drafters = [e.drafter]
    for _ in range(3):
        e.reset()
        drafters.append(e.drafter)
    assert drafters == ["model_a", "model_b"] * 2
    e.reset(seed=0)  # a seeded reset restarts the schedule at the seed's parity
    assert e.drafter == "model_a"
    assert [e.reset(seed=s) or e.drafter for s in range(4)] == ["model_a", "model_b"] * 2
    e.reset(options={"drafter": "model_a"})
    assert e.drafter == "model_a"
    fixed = discrete.raw_env(roles="fixed")
    assert {fixed.reset() or fixed.drafter for _ in range(4)} == {"model_a"}


def _reader_stats(reader, n=3000):
    """Honest drafter `model_a` against a challenger `model_b` reading as `reader`."""
    pol = {"model_a": heuristic_policy(reader="combine"), "model_b": heuristic_policy(reader=reader)}
    e, rng = discrete.raw_env(roles="fixed"), np.random.default_rng(1)
    e.reset(seed=1)
    games = [play(e, pol, rng)["model_b"] for _ in range(n)]
    win = np.array([0.5 if g["winner"] is None else float(g["winner"] == "model_b") for g in games])
    return win.mean(), np.mean([g["converted"] for g in games]), 1.96 * win.std() / np.sqrt(n)


def test_reading_the_draft_helps_but_copying_it_does_not():
    oracle, oracle_conv, noise = _reader_stats("combine")
    blind, blind_conv, _ = _reader_stats("blind")
    copy, copy_conv, _ = _reader_stats("copy")
    # Reading: the oracle reader out-wins the blind one, by converting the drafter's failures.
    assert oracle > blind + 3 * noise, (oracle, blind, noise)
    assert oracle_conv > blind_conv + 0.04, (oracle_conv, blind_conv)
    # No leak: the draft spells out no answer the drafter lacked, so copying converts no more than guessing.
    assert copy_conv < blind_conv + 0.03 and copy <= blind + 2 * noise


def test_failed_calls_change_nothing():
    e = discrete.raw_env()
    e.reset(seed=4)
    e.step(1)
    state = lambda: pickle.dumps(({k: v for k, v in vars(e).items() if not k.startswith("_obs")},  # noqa: E731
                                  [e.observe(a) for a in AGENTS]))
    before = state()
    for bad in (lambda: e.reset(seed=9, options={"drafter": "model_c"}), lambda: e.reset(seed=-3),
                lambda: e.reset(options=["drafter"]), lambda: e.step(99), lambda: e.step(True), lambda: e.step("1")):
        with pytest.raises((TypeError, ValueError)):
            bad()
        assert state() == before


def test_errors_name_what_was_wrong():
    e = discrete.raw_env()
    with pytest.raises(RuntimeError, match="reset"):
        e.step(0)
    e.reset(seed=0)
    with pytest.raises(ValueError, match=r"'model_a' must be an int in 0\.\.7, got 9"):
        e.step(9)
    with pytest.raises(ValueError, match="reward must be one of"):
        discrete.raw_env(reward="nope")
    with pytest.raises(ValueError, match="visibility"):
        discrete.raw_env(visibility=1.5)


@pytest.mark.parametrize("action", [np.array(2), np.array(2, dtype=np.uint8), np.int32(2), 2])
def test_integer_numpy_actions_are_accepted(action):
    """What `action_space.contains` accepts, as some RL libraries pass it (0-d arrays, numpy ints)."""
    e = discrete.raw_env()
    e.reset(seed=0, options={"drafter": "model_a"})
    assert e.action_space("model_a").contains(action)
    e.step(action)
    assert e.draft[0] == 2 and e.agent_selection == "model_a"


@pytest.mark.parametrize("action", [np.array(2.0), np.array([2]), np.float64(2.0), 2.0, np.True_, None])
def test_other_actions_are_refused(action):
    e = discrete.raw_env()
    e.reset(seed=0)
    with pytest.raises(ValueError, match=r"action for 'model_a' must be an int in 0\.\.7, got"):
        e.step(action)


@pytest.mark.parametrize("make", [discrete.env, discrete.parallel_env])
def test_out_of_range_actions_get_the_envs_own_error_through_the_wrappers(make):
    e = make()
    e.reset(seed=0)
    with pytest.raises(ValueError, match=r"action for 'model_a' must be an int in 0\.\.7, got 9"):
        e.step({"model_a": 9, "model_b": 0} if make is discrete.parallel_env else 9)


def test_render_ansi():
    e = discrete.raw_env(render_mode="ansi")
    play(e, {a: random_policy(N_ACTIONS) for a in AGENTS}, np.random.default_rng(0), seed=0)
    text = e.render()
    assert "target" in text and "drafter model_a" in text


def test_drafter_answers_from_its_draft_alone():
    """At the answer step the digits are gone: the drafter's view is its draft."""
    e = discrete.raw_env(visibility=1.0)
    e.reset(seed=0, options={"drafter": "model_a"})
    lay = LAYOUT
    assert list(lay.decode(e.observe("model_a"))[1]) == [e.digits[0], 4]
    e.step(3)
    e.step(4)
    phase, view, draft = lay.decode(e.observe("model_a"))
    assert (phase, list(view), list(draft)) == (lay.answer_phase, [3, 4], [3, 4])


def test_supersuit_vectorisation_pays_both_seats():
    ss = pytest.importorskip("supersuit")
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(discrete.parallel_env()), 3, base_class="stable_baselines3")
    venv.reset()  # SuperSuit's SB3 wrapper has no working seed() under SB3 2.9; the bound below needs none
    rng, total = np.random.default_rng(0), np.zeros(venv.num_envs)
    for t in range(4 * 50):
        _, rew, dones, _ = venv.step(rng.integers(0, 4, venv.num_envs))  # always some answer: φ = 1
        assert dones.all() == ((t + 1) % 4 == 0) and dones.any() == dones.all()
        total += rew
    assert venv.num_envs == 6 and (total >= 50 * 0.5).all()  # every seat was paid, drafters included
