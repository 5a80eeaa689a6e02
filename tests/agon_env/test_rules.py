import ast
import inspect
import itertools
import re
import time

import pytest

import agon_env.rules
from agon_env.rules import (
    ANSWER_FORMATS,
    REWARD_SCHEMES,
    RewardConfig,
    challenger_reward,
    drafter_reward,
    drafter_reward_for,
    drafter_seat,
    extract_answer,
    format_ok,
    game_rates,
    pay,
    summarize,
)

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


@pytest.mark.parametrize("scheme", REWARD_SCHEMES)
def test_length_tiebreak_only_when_both_right_and_shorter(scheme):
    for ca, cb in itertools.product((0, 1), repeat=2):
        for la, lb in ((10, 5), (5, 10), (7, 7)):
            base = challenger_reward(scheme, ca, cb, 1, LAM)
            r = challenger_reward(scheme, ca, cb, 1, LAM, length_tiebreak=0.25, len_a=la, len_b=lb)
            # zero_sum has no tiebreak: its pay must stay zero-sum
            assert r - base == (0.25 if (ca and cb and lb < la and scheme != "zero_sum") else 0.0)
            if scheme == "zero_sum":
                g = pay(RewardConfig(scheme, length_tiebreak=0.25), {"correct": ca, "formatted": True, "length": la},
                        {"correct": cb, "formatted": True, "length": lb})
                assert g.drafter_reward + g.challenger_reward == 0.0


@pytest.mark.parametrize("field, value", [
    ("format_weight", "0.5"), ("format_weight", float("nan")), ("format_weight", True), ("format_weight", None),
    ("length_tiebreak", float("inf")), ("length_tiebreak", "0"), ("length_tiebreak", [0.1]),
])
def test_reward_config_needs_finite_real_numbers(field, value):
    with pytest.raises(ValueError, match=re.escape(f"RewardConfig {field} must be a finite real number, got {value!r}")):
        RewardConfig(**{field: value})


def test_reward_config_accepts_ints_and_numpy_numbers():
    import numpy as np

    assert pay(RewardConfig(format_weight=np.float32(0.25), length_tiebreak=1), {"correct": True, "formatted": True},
               {"correct": True, "formatted": True}).drafter_reward == 2.25


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


def test_format_term_counts_answer_blocks_outside_the_thinking():
    assert not format_ok("<think><answer>3</answer></think>")
    assert not format_ok("<think>cut off <answer>3</answer>")
    assert format_ok("<think>draft <answer>3</answer></think>so<answer>4</answer>")
    assert format_ok("prompt-side reasoning</think>s<answer>3</answer>")
    assert not format_ok("<answer>3</answer></think>s")


@pytest.mark.parametrize("completion, tags, boxed, either", [
    ("<answer>7</answer>", "7", None, "7"),
    ("so \\boxed{7}.", None, "7", "7"),
    ("\\boxed{7} then <answer>8</answer>", "8", "7", "8"),  # tags win under tags_or_boxed
    ("first \\boxed{1}, corrected: \\boxed{2}", None, "2", "2"),  # several boxes: the last
    ("\\boxed{\\frac{1}{\\sqrt{2}}}", None, "\\frac{1}{\\sqrt{2}}", "\\frac{1}{\\sqrt{2}}"),  # nested braces
    ("\\boxed{\\{1, 2\\}}", None, "\\{1, 2\\}", "\\{1, 2\\}"),  # escaped braces pair up
    ("\\fbox{3}", None, "3", "3"),
    ("\\boxed {4}", None, "4", "4"),
    ("<think>maybe \\boxed{5}</think>I am not sure.", None, None, None),  # a box in thinking is no answer
    ("<think>try \\boxed{5}</think>so \\boxed{6}", None, "6", "6"),
    ("we get \\boxed{5}</think> prompt-side reasoning ends; no answer", None, None, None),
    ("<think>long reasoning, gold 42 appears, cut off", None, None, None),  # truncated: no answer
    ("so the answer is \\boxed{\\frac{1}{2", None, None, None),  # an unclosed box is no answer
    ("\\boxed{3} and finally \\boxed{\\frac{1}{2", None, "3", "3"),  # the last balanced one
    ("\\boxed{}", None, None, None),
    ("the answer is 42", None, None, None),
    ("<think>it is <answer>5</answer></think>not sure", None, None, None),  # tags in thinking are no answer
    ("<think>cut off, <answer>5</answer> maybe", None, None, None),  # nor in an unclosed <think>
    ("prompt-side <answer>5</answer></think>so", None, None, None),  # nor before a lone </think>
    ("<think><answer>4</answer></think>so <answer>5</answer>", "5", None, "5"),
    ("<think><answer>4</answer></think>so \\boxed{5}", None, "5", "5"),
])
def test_answer_formats(completion, tags, boxed, either):
    got = [extract_answer(completion, f) for f in ANSWER_FORMATS]
    assert got == [tags, boxed, either]
    assert extract_answer(completion) == either  # tags_or_boxed is the default


def test_format_term_requires_tags_whatever_the_answer_format():
    assert not format_ok("\\boxed{7}") and extract_answer("\\boxed{7}") == "7"
    assert format_ok("<think>a</think>s<answer>\\boxed{7}</answer>")
    with pytest.raises(ValueError, match="answer_format must be one of"):
        extract_answer("x", "latex")


def test_hostile_boxes_are_scanned_in_linear_time():
    deep = "\\boxed{" * 100_000 + "1" + "}" * 100_000
    t = time.perf_counter()
    assert extract_answer(deep).startswith("\\boxed{")  # the outermost box: math-verify decides
    assert extract_answer("\\boxed{" * 300_000) is None  # 2 MB, never closed
    assert summarize("\\boxed{" * 300_000) == ""
    assert time.perf_counter() - t < 5.0


def test_hostile_answer_tags_are_scanned_in_linear_time():
    t = time.perf_counter()
    for text in ("<answer>" * 300_000, "<answer>" * 300_000 + "</answer>", "</answer><answer>" * 150_000):
        extract_answer(text, "tags"), format_ok(text), summarize(text)
    assert time.perf_counter() - t < 5.0  # `<answer>(.*?)</answer>` took 10 s for 10 000 openers


@pytest.mark.parametrize("draft", [
    "\\bo\\boxed{x}xed{SECRET}",  # removing one box must not splice another together
    "<ans<answer>x</answer>wer>SECRET</answer>",
    "<ans\\boxed{1}wer>SECRET</answer>",
    "result: \\boxed{SECRET} and <answer>SECRET</answer>",
])
def test_summary_withholds_spliced_answers(draft):
    assert "SECRET" not in summarize(draft)


def test_drafter_seat_is_the_rotation_rule():
    assert [drafter_seat(t) for t in range(4)] == [0, 1, 0, 1]
    assert {drafter_seat(t, fixed=True) for t in range(4)} == {0}
    assert drafter_seat(2**70 + 1) == 1


def test_pay_uses_the_schemes_and_tolerates_missing_lengths():
    right, wrong = {"correct": True, "formatted": True}, {"correct": False, "formatted": False}
    r = pay(RewardConfig("agon"), wrong, right)
    assert (r.drafter_reward, r.challenger_reward, r.converted, r.winner) == (0.0, 3.5, True, "challenger")
    tiebreak = RewardConfig("agon", length_tiebreak=0.25)
    tie = pay(tiebreak, {**right, "length": 9}, {**right, "length": 3})
    assert tie.challenger_reward == 2.75 and tie.winner is None


def test_game_rates_by_hand():
    """Five games (drafter right, challenger right): every rate a learner logs, counted by hand."""
    verdict = lambda c: {"correct": bool(c), "formatted": True}  # noqa: E731
    games = [pay(RewardConfig("agon"), verdict(a), verdict(b)) for a, b in ((1, 1), (1, 0), (0, 1), (0, 1), (0, 0))]
    assert game_rates(games) == pytest.approx({
        "drafter_pass": 2 / 5, "challenger_pass": 3 / 5,
        "conversion": 2 / 3,  # right on 2 of the 3 wrong drafts
        "keep": 1 / 2,  # right on 1 of the 2 right drafts
        "win_drafter": 1 / 5, "win_challenger": 2 / 5, "tie": 2 / 5,
    })
    assert set(game_rates([]).values()) == {0.0}
    every_draft_right = game_rates([pay(RewardConfig("agon"), verdict(1), verdict(b)) for b in (1, 0)])
    assert every_draft_right["conversion"] == 0.0 and every_draft_right["keep"] == 1 / 2  # 0.0 where undefined


def test_rules_import_nothing_from_the_package():
    """One-way layers: rules ← grading ← game; rules imports no package module, not even for types."""
    tree = ast.parse(inspect.getsource(agon_env.rules))
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not [n for n in imports if isinstance(n, ast.ImportFrom) and (n.level or n.module.startswith(("agon_env", "problems")))]
