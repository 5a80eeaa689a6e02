import itertools

import pytest

from agon_env.grading import ExactMatchGrader
from agon_env.rules import (
    REWARD_SCHEMES, RewardConfig, challenger_reward, drafter_reward, drafter_reward_for, extract_answer,
    format_ok, score_games, summarize,
)
from problems.record import Problem

LAM = 0.5


def expected_challenger(scheme, ca, cb, phib):
    # The paper's table, written out case by case rather than by formula.
    table = {
        "agon": {(0, 0): 0, (0, 1): 3, (1, 0): 0, (1, 1): 2},
        "cooperative": {(0, 0): 0, (0, 1): 2, (1, 0): 0, (1, 1): 2},
        "margin": {(0, 0): 0, (0, 1): 1, (1, 0): -1, (1, 1): 0},
        "zero_sum": {(0, 0): 0, (0, 1): 1, (1, 0): -1, (1, 1): 0},
    }
    return table[scheme][(ca, cb)] + (0 if scheme == "zero_sum" else LAM * phib)


@pytest.mark.parametrize("scheme", REWARD_SCHEMES)
def test_full_reward_table(scheme):
    for ca, cb, phia, phib in itertools.product((0, 1), repeat=4):
        assert challenger_reward(scheme, ca, cb, phib, LAM) == expected_challenger(scheme, ca, cb, phib)
        want_a = (ca - cb) if scheme == "zero_sum" else 2 * ca + LAM * phia
        assert drafter_reward_for(scheme, ca, cb, phia, LAM) == want_a
    assert drafter_reward(1, 1, LAM) == 2.5 and drafter_reward(0, 1, LAM) == 0.5


def test_length_tiebreak_only_when_both_right_and_shorter():
    for ca, cb in itertools.product((0, 1), repeat=2):
        for la, lb in ((10, 5), (5, 10), (7, 7)):
            base = challenger_reward("agon", ca, cb, 1, LAM)
            r = challenger_reward("agon", ca, cb, 1, LAM, length_tiebreak=0.25, len_a=la, len_b=lb)
            assert r - base == (0.25 if (ca and cb and lb < la) else 0.0)


def test_unknown_scheme_is_named():
    with pytest.raises(ValueError, match="reward scheme must be one of"):
        challenger_reward("bogus", 1, 1, 1)
    with pytest.raises(ValueError, match="reward must be one of"):
        RewardConfig("bogus")


@pytest.mark.parametrize("draft, shown", [
    ("<think>secret 41</think>Added tens first.<answer>42</answer>", "Added tens first."),
    ("no tags at all, answer is in prose", "no tags at all, answer is in prose"),
    ("<think>a</think>x<answer>1</answer> y <answer>2</answer>", "x y"),
    ("Plan: halve it.<think>never closed 42", "Plan: halve it."),
    ("reasoning from the prompt</think>Use symmetry.<answer>7</answer>", "Use symmetry."),
    ("So the result is \\boxed{\\frac{1}{2}} done", "So the result is  done"),
    ("<think>x</think>Summary<answer>unclosed 5", "Summary"),
    ("<think>one</think>A<think>two</think>B<answer>3</answer>", "AB"),
])
def test_summary_drops_thinking_and_withholds_answer(draft, shown):
    assert summarize(draft) == shown


def test_summary_modes():
    d = "<think>t</think>S<answer>9</answer>"
    assert summarize(d, "full") == d
    assert summarize(d, "with_answer") == "S<answer>9</answer>"
    assert summarize("x" * 50, max_chars=10) == "x" * 10
    with pytest.raises(ValueError, match="summary mode"):
        summarize(d, "bogus")


def test_answer_extraction_and_format():
    assert extract_answer("<answer> 1 </answer> then <answer>2</answer>") == "2"
    assert extract_answer("the answer is 42") is None
    assert extract_answer("<answer>   </answer>") is None
    assert format_ok("<think>x</think>s<answer>3</answer>")
    assert not format_ok("<answer>3</answer><answer>4</answer>")
    assert not format_ok("<think>x<answer>3</answer>")
    assert not format_ok("3")


def test_score_games_pays_conversion_bonus():
    p = Problem(id="p", question="1+1?", answer="2")
    right, wrong = "<answer>2</answer>", "<answer>3</answer>"
    res = score_games([p] * 4, [wrong, wrong, right, right], [right, wrong, right, wrong], ExactMatchGrader())
    assert [r.challenger_reward for r in res] == [3.5, 0.5, 2.5, 0.5]
    assert [r.drafter_reward for r in res] == [0.5, 0.5, 2.5, 2.5]
    assert [r.converted for r in res] == [True, False, False, False]
    assert [r.winner for r in res] == ["challenger", None, None, "drafter"]
    with pytest.raises(ValueError, match="equal lengths"):
        score_games([p], [right, right], [right], ExactMatchGrader())
