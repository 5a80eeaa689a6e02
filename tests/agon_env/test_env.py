import pickle

import pytest
from pettingzoo.test import api_test, parallel_api_test, render_test, seed_test

import agon_env
from agon_env.grading import ExactMatchGrader

RIGHT = "<think>private 41</think>Added the ones first.<answer>{}</answer>"


def make(small_problems, **kw):
    kw.setdefault("grader", ExactMatchGrader())
    kw.setdefault("max_chars", 512)
    return lambda **extra: agon_env.env(problems=small_problems, **{**kw, **extra})


def test_pettingzoo_api(small_problems):
    api_test(make(small_problems)(), num_cycles=200)


def test_seed(small_problems):
    seed_test(make(small_problems), num_cycles=100)


def test_render(small_problems):
    render_test(make(small_problems))


def test_parallel_api(small_problems):
    parallel_api_test(agon_env.parallel_env(problems=small_problems, grader=ExactMatchGrader(), max_chars=512), num_cycles=100)


def play(e, draft, response):
    e.step(draft)
    e.step(response)


def test_episode_observations_rewards_and_infos(small_problems):
    e = make(small_problems, template="compact")()
    e.reset(seed=3, options={"drafter": "model_b"})
    p = e.unwrapped.problem
    obs = e.observe("model_b")
    assert obs["role"] == 0 and obs["prompt"] == f"Q:{p.question}\nA:" and obs["summary"] == ""
    assert obs["messages"] == ({"role": "user", "content": obs["prompt"]},)
    assert e.observe("model_a")["prompt"] == ""  # not its turn yet
    e.step(RIGHT.format("wrong"))
    obs = e.observe("model_a")
    assert obs["role"] == 1 and obs["summary"] == "Added the ones first."
    assert "private" not in obs["prompt"] and "wrong" not in obs["prompt"]
    assert obs["prompt"] == f"D:Added the ones first.\nQ:{p.question}\nA:"
    e.step(RIGHT.format(p.answer))
    assert all(e.terminations.values())
    a, b = e.infos["model_b"], e.infos["model_a"]
    assert (a["role"], b["role"]) == ("drafter", "challenger")
    assert (a["correct"], b["correct"]) == (False, True) and b["converted"] and b["winner"] == "model_a"
    assert e.rewards == {"model_b": 0.5, "model_a": 3.5}
    assert b["answer"] == p.answer and b["length"] == len(RIGHT.format(p.answer)) and b["verdict"] == "correct"


@pytest.mark.parametrize("reward, expected", [("cooperative", 2.5), ("margin", 1.5), ("zero_sum", 1.0)])
def test_reward_schemes_reach_the_env(small_problems, reward, expected):
    e = make(small_problems, reward=reward)()
    e.reset(seed=0)
    play(e, "<answer>nope</answer>", f"<answer>{e.unwrapped.problem.answer}</answer>")
    assert e.rewards[e.unwrapped.challenger] == expected


def test_roles_alternate_and_pin(small_problems):
    e = make(small_problems)()
    drafters = []
    for i in range(4):
        e.reset(seed=0) if i == 0 else e.reset()
        drafters.append(e.agent_selection)
        play(e, "a", "b")
    assert drafters == ["model_a", "model_b", "model_a", "model_b"]
    e.reset(seed=7)  # the seed's parity plus the episodes since
    assert e.agent_selection == "model_b"
    e.reset(options={"drafter": "model_a"})
    assert e.agent_selection == "model_a"
    fixed = make(small_problems, roles="fixed")()
    for i in range(3):
        fixed.reset(seed=i)
        assert fixed.agent_selection == "model_a"
        play(fixed, "a", "b")
        fixed.reset()
        assert fixed.agent_selection == "model_a"


def test_a_loop_that_seeds_every_reset_alternates_roles(small_problems):
    e = make(small_problems)()
    drafters = []
    for ep in range(6):
        e.reset(seed=ep)
        drafters.append(e.agent_selection)
        play(e, "a", "b")
    assert drafters == ["model_a", "model_b"] * 3
    again = make(small_problems)()
    again.reset(seed=3)
    e.reset(seed=3)  # reset(seed) alone fixes the episode
    assert (again.agent_selection, again.unwrapped.problem) == (e.agent_selection, e.unwrapped.problem)


def test_seeded_problem_order_reproducible(small_problems):
    def order(seed):
        e = make(small_problems)()
        ids = []
        for i in range(10):
            e.reset(seed=seed) if i == 0 else e.reset()
            ids.append(e.unwrapped.problem.id)
            play(e, "a", "b")
        return ids
    assert order(1) == order(1) != order(2)
    assert sorted(order(1)[:6]) == sorted(p.id for p in small_problems)  # an epoch covers every problem


def test_bad_input_errors_leave_env_usable(small_problems):
    raw = agon_env.raw_env(problems=small_problems, grader=ExactMatchGrader())
    with pytest.raises(RuntimeError, match="reset"):
        raw.step("x")
    e = make(small_problems)()
    with pytest.raises(Exception, match="reset"):
        e.step("x")
    e.reset(seed=0)
    with pytest.raises(TypeError, match="action for 'model_a' must be str, got int"):
        e.step(3)
    assert e.agent_selection == "model_a"  # nothing changed
    play(e, "a", "b")
    with pytest.raises(ValueError, match="is done; the only valid action is None"):
        e.step("more")
    e.step(None)
    e.step(None)  # PettingZoo dead steps still work
    assert e.agents == []
    for action in (None, "late"):  # the wrapper only warns here, as PettingZoo's OrderEnforcingWrapper does
        with pytest.raises(RuntimeError, match="the episode is over; call reset"):
            e.unwrapped.step(action)
    e.reset()
    assert e.agent_selection in agon_env.AGENTS


def _state(raw):
    """Everything a reset or step could change, observations included."""
    obs = {a: raw.observe(a) for a in raw.possible_agents} if hasattr(raw, "drafter") else None
    return pickle.dumps(({k: v for k, v in vars(raw).items() if k not in ("game", "_obs_space", "_act_space")}, obs))


@pytest.mark.parametrize("call, error, msg", [
    (lambda e: e.reset(seed=123, options={"drafter": "nobody"}), ValueError, "options\\['drafter'\\] must be one of"),
    (lambda e: e.reset(seed=5, options="drafter"), TypeError, "options must be a dict or None, got str"),
    (lambda e: e.reset(options=42), TypeError, "options must be a dict or None, got int"),
    (lambda e: e.reset(seed=-1), ValueError, "seed must be a non-negative int or None, got -1"),
    (lambda e: e.reset(seed="abc"), TypeError, "seed must be a non-negative int or None, got str"),
    (lambda e: e.reset(seed=1.5), TypeError, "seed must be a non-negative int or None, got float"),
    (lambda e: e.reset(seed=2, options={"problem": {"id": "x"}}), ValueError, "options\\['problem'\\]: missing 'question'"),
    (lambda e: e.reset(seed=2, options={"problem": 7}), TypeError, "options\\['problem'\\] must be a Problem or dict, got int"),
    (lambda e: e.step(3), TypeError, "action for 'model_\\w' must be str, got int"),
    (lambda e: e.step(b"bytes"), TypeError, "must be str, got bytes"),
])
@pytest.mark.parametrize("moment", ["fresh", "mid_episode", "after_draft"])
def test_failed_calls_change_nothing(small_problems, call, error, msg, moment):
    raw = agon_env.raw_env(problems=small_problems, grader=ExactMatchGrader())
    raw.reset(seed=11)
    play(raw, "a", "b")
    raw.reset()
    if moment == "after_draft":
        raw.step("<think>x</think>draft<answer>5</answer>")
    before = _state(raw)
    with pytest.raises(error, match=msg):
        call(raw)
    assert _state(raw) == before


def test_a_grader_failure_at_the_last_step_changes_nothing(small_problems):
    class Broken(ExactMatchGrader):
        def grade_batch(self, problems, completions):
            raise RuntimeError("grader down")
    raw = agon_env.raw_env(problems=small_problems, grader=Broken())
    raw.reset(seed=0)
    raw.step("draft")
    before = _state(raw)
    with pytest.raises(RuntimeError, match="grader down"):
        raw.step("response")
    assert _state(raw) == before and raw.agent_selection == raw.challenger


def test_unknown_reset_options_are_ignored_with_a_warning(small_problems):
    e = make(small_problems)()
    with pytest.warns(UserWarning, match="ignoring unknown option\\(s\\) 'colour'"):
        e.reset(seed=0, options={"colour": "red"})


@pytest.mark.parametrize("kw, msg", [
    ({"reward": "bogus"}, "reward must be one of"),
    ({"summary": "bogus"}, "summary must be one of"),
    ({"roles": "random"}, "roles must be"),
    ({"problems": []}, "problems is empty"),
    ({"problems": [{"id": "x"}]}, "problems\\[0\\]: missing 'question'"),
    ({"render_mode": "rgb_array"}, "render_mode must be"),
])
def test_bad_config(small_problems, kw, msg):
    kw = {"problems": small_problems, **kw}
    with pytest.raises(ValueError, match=msg):
        agon_env.raw_env(grader=ExactMatchGrader(), **kw)


def test_unicode_and_overlong_text(small_problems):
    e = make(small_problems, max_chars=64, template="compact")()  # room in the prompt for some summary
    e.reset(seed=0)
    draft = "𝔸 emoji 🙂 and \ud800 surrogate" + "z" * 200 + "<answer>1</answer>"
    e.step(draft)
    obs = e.observe(e.unwrapped.challenger)
    assert e.observation_space(e.unwrapped.challenger).contains(obs)
    assert len(obs["summary"]) <= 64 and "\ufffd" in obs["summary"]
    e.step("ünïcödé " * 40)
    info = e.infos[e.unwrapped.challenger]
    assert info["clipped"] and info["length"] == 64
    assert e.infos[e.unwrapped.drafter]["clipped"]


@pytest.mark.parametrize("template", ["default", "compact"])
def test_a_long_summary_is_shortened_so_the_problem_stays_in_the_prompt(small_problems, template):
    e = make(small_problems, max_chars=2000, template=template)()
    e.reset(seed=0)
    question, challenger = e.unwrapped.problem.question, e.unwrapped.challenger
    e.step("Plan " + "x" * 1995)  # a summary as long as max_chars
    obs = e.observe(challenger)
    assert obs["prompt"].endswith(question + ("\nA:" if template == "compact" else "")) and len(obs["prompt"]) == 2000
    assert obs["summary"].startswith("Plan x") and obs["summary"] in obs["prompt"] and len(obs["summary"]) < 2000
    assert e.infos[challenger]["summary_clipped"]
    e.step("<answer>1</answer>")
    assert e.infos[challenger]["summary_clipped"] and "summary_clipped" not in e.infos[e.unwrapped.drafter]
    e.reset()
    e.step("short plan")
    assert e.observe(e.unwrapped.challenger)["summary"] == "short plan"
    assert not e.infos[e.unwrapped.challenger]["summary_clipped"]


def test_a_template_longer_than_max_chars_shows_no_summary(small_problems):
    e = make(small_problems, max_chars=40)()
    e.reset(seed=0)
    e.step("Plan: add.")
    obs = e.observe(e.unwrapped.challenger)
    assert obs["summary"] == "" and len(obs["prompt"]) == 40 and e.infos[e.unwrapped.challenger]["summary_clipped"]


def test_render_shows_the_game(small_problems):
    e = make(small_problems, render_mode="ansi")()
    e.reset(seed=0)
    play(e, "<think>hidden</think>Shown plan<answer>5</answer>", "<answer>6</answer>")
    text = e.render()
    for part in ("Problem", "Shown plan", "Summary shown to the challenger", "reward=", "Reference answer"):
        assert part in text


def test_math_grader_default(small_problems):
    e = agon_env.env(problems=small_problems)
    e.reset(seed=0, options={"problem": small_problems[0]})
    play(e, "<answer>5.0</answer>", "<answer>\\frac{10}{2}</answer>")
    assert e.infos["model_a"]["correct"] and e.infos["model_b"]["correct"]
