"""Property-based tests of the rules and the text env's inputs (hypothesis)."""

import itertools
import re
from functools import cache

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import agon_env
from agon_env.game import AgonGame
from agon_env.grading import ExactMatchGrader
from agon_env.rules import ANSWER_FORMATS, REWARD_SCHEMES, extract_answer, summarize
from problems.record import Problem

FAST = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# Text built from the pieces the rules care about, so the interesting cases come up often.
PIECES = ["<think>", "</think>", "<answer>", "</answer>", "\\boxed{", "\\fbox{", "{", "}", "\\", "```", "\n\n\n",
          "<ans", "wer>", "\\bo", "xed{", "\\boxed{x}", "<answer>x</answer>", "2", " ", "x"]
ANY_CHAR = st.characters(codec=None, categories=None)  # every code point, lone surrogates included
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(ANY_CHAR, max_size=5)), max_size=40).map("".join)


@FAST
@given(texts, st.sampled_from(["math", "code"]))
@example("\\bo\\boxed{x}xed{5}", "math")  # removing a box must not splice another together
@example("<ans```x```wer>5</answer>", "code")
def test_summary_never_shows_an_answer_block_or_box(draft, domain):
    s = summarize(draft, domain=domain)
    assert "<answer>" not in s and not re.search(r"\\(?:boxed|fbox)\s*\{", s)
    assert all(extract_answer(s, f) is None for f in ANSWER_FORMATS)


@FAST
@given(st.lists(st.one_of(st.sampled_from(PIECES[:10]), st.text("abc ", max_size=4)), max_size=12),
       st.sampled_from(["<answer>SECRET</answer>", "\\boxed{SECRET}", "<answer>SECRET", "\\boxed{SECRET"]),
       st.integers(0, 12))
def test_withheld_answers_never_reach_the_summary(prose, answer, at):
    """The drafter's answer, anywhere among any prose, is not shown to the challenger."""
    draft = "".join(prose[:at]) + answer + "".join(prose[at:])
    assert "SECRET" not in summarize(draft)


@FAST
@given(st.text(ANY_CHAR, max_size=300) | texts, st.sampled_from(ANSWER_FORMATS))
def test_extract_answer_never_raises(completion, fmt):
    ans = extract_answer(completion, fmt)
    assert ans is None or (isinstance(ans, str) and ans == ans.strip() and ans)


def _reward_sets(scheme, lam, tie):
    """The reward values documented in agon_env.env, per role."""
    grpo = {2 * c + lam * f for c, f in itertools.product((0, 1), repeat=2)}
    if scheme == "zero_sum":
        return {-1.0, 0.0, 1.0}, {-1.0, 0.0, 1.0}
    challenger = {
        "agon": {2 * cb + cb * (1 - ca) + lam * f + tie * cb * ca * s for ca, cb, f, s in itertools.product((0, 1), repeat=4)},
        "cooperative": {2 * cb + lam * f + tie * cb * s for cb, f, s in itertools.product((0, 1), repeat=3)},
        "margin": {cb - ca + lam * f + tie * cb * ca * s for ca, cb, f, s in itertools.product((0, 1), repeat=4)},
    }[scheme]
    return grpo, challenger


completions = st.sampled_from(["<answer>5</answer>", "<answer>6</answer>", "\\boxed{5}", "<think>5</think>",
                               "<answer>5</answer><answer>5</answer>", "", "5"]) | texts


@FAST
@given(st.sampled_from(REWARD_SCHEMES), st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([0.0, 0.25]),
       st.lists(st.tuples(completions, completions), min_size=1, max_size=6), st.data())
def test_rewards_stay_in_their_documented_sets(scheme, lam, tie, games, data):
    game = AgonGame(reward=scheme, format_weight=lam, length_tiebreak=tie, grader=ExactMatchGrader())
    problems = [Problem(id="p", question="q", answer="5")] * len(games)
    drafts, responses = [d for d, _ in games], [r for _, r in games]
    d_set, c_set = _reward_sets(scheme, lam, tie)
    for g in game.score(problems, drafts, responses):
        assert g.drafter_reward in d_set and g.challenger_reward in c_set
    read = data.draw(st.lists(st.integers(0, len(drafts) - 1), min_size=len(drafts), max_size=len(drafts)))
    played = game.score_round(problems, drafts, responses, read)
    grpo, _ = _reward_sets("agon", lam, tie)
    assert all(r in d_set | grpo for r in played.drafter_rewards)
    assert all(g.challenger_reward in c_set for g in played.games)
    assert all(r in grpo for r in game.grade_solo(problems, drafts)[0])


@cache
def _env():  # one env for all examples: building its text spaces is the slow part
    problems = [Problem(id="p", question="What is 2 + 3? 🙂 " + "x" * 60, answer="5")]
    return agon_env.env(problems=problems, grader=ExactMatchGrader(), max_chars=48)


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(ANY_CHAR, max_size=120) | texts, st.text(ANY_CHAR, max_size=120) | texts, st.integers(0, 3))
def test_env_takes_any_text_and_observations_fit_their_spaces(draft, response, seed):
    e = _env()
    e.reset(seed=seed)
    for action in (draft, response):
        for agent in e.possible_agents:
            assert e.observation_space(agent).contains(e.observe(agent))
        e.step(action)
    for agent in e.possible_agents:
        assert e.observation_space(agent).contains(e.observe(agent))
        assert e.infos[agent]["length"] <= 48 and e.terminations[agent]


@given(st.lists(st.sampled_from(["<think>", "</think>", "a", " 7 ", "<answer>1</answer>", "\n"]), max_size=30))
def test_drop_thinking_removes_the_blocks_the_regex_does(parts):
    """drop_thinking finds blocks by str.find (linear); it must remove what `<think>.*?</think>` would."""
    from agon_env.rules import drop_thinking

    text = "".join(parts)
    want = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    if "</think>" in want:
        want = want.rsplit("</think>", 1)[1]
    assert drop_thinking(text) == want.split("<think>", 1)[0]


@pytest.mark.timeout(20)
def test_many_unclosed_openers_do_not_hang_the_rules():
    """The regex rescanned to the end from each of 300k openers (minutes); drop_thinking is linear."""
    from agon_env.rules import drop_thinking, format_ok

    text = "<think>x" * 300_000 + "<answer>1</answer>"
    assert drop_thinking(text) == "" and extract_answer(text) is None and not format_ok(text)


@given(st.lists(st.sampled_from(["<answer>", "</answer>", "a", " 7 ", "\n"]), max_size=30))
def test_answer_blocks_are_the_ones_the_regex_finds(parts):
    """Answer blocks are found by str.find (linear); they must be what `<answer>(.*?)</answer>` finds."""
    from agon_env.rules import _cut_answers, format_ok

    text = "".join(parts)
    blocks = re.findall(r"<answer>(.*?)</answer>", text, re.S)
    assert extract_answer(text, "tags") == ((blocks[-1].strip() or None) if blocks else None)
    assert format_ok(text) == (len(blocks) == 1 and bool(blocks[0].strip()))
    assert _cut_answers(text) == re.sub(r"<answer>.*?</answer>", "", text, flags=re.S).split("<answer>", 1)[0]
