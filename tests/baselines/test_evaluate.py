"""Evaluation: Clopper-Pearson, one model's pass@1, a cascade's conversion and keep, the direction choice."""

import pytest

from agon_env.game import AgonGame
from agon_env.grading import ExactMatchGrader
from baselines.config import EvalConfig
from baselines.evaluate import choose_direction, clopper_pearson, evaluate_cascade, evaluate_single
from problems.record import Problem

from .scripted import ScriptedPolicy, ans


@pytest.mark.parametrize("k,n,lo,hi", [(0, 10, 0.0, 0.3085), (5, 10, 0.1871, 0.8129), (10, 10, 0.6915, 1.0),
                                       (1, 20, 0.0013, 0.2487)])
def test_clopper_pearson_known_values(k, n, lo, hi):
    got = clopper_pearson(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-4)


def test_single_and_cascade_rows_count_what_was_right():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    ps = [Problem(id=str(i), question=f"q{i}", answer="1") for i in range(4)]
    drafter = ScriptedPolicy("A", lambda p: ans(1) if p.startswith("Q:q0") or p.startswith("Q:q1") else ans(0))
    answerer = ScriptedPolicy("B", lambda p: ans(1) if "Q:q0" in p or "Q:q2" in p else ans(0))
    single = evaluate_single(drafter, ps, game, EvalConfig(samples=2), 0)
    assert (single["pass@1"], single["n"], single["greedy"]) == (0.5, 8, 0.5)
    row = evaluate_cascade(drafter, answerer, ps, game, EvalConfig(samples=1, greedy=False), 0)
    # drafts right on q0, q1; the answerer right on q0 (keep) and q2 (conversion)
    assert (row["method"], row["pass@1"], row["drafter_pass"]) == ("A→B", 0.5, 0.5)
    assert (row["conversion"], row["keep"]) == (0.5, 0.5)


def test_choose_direction_needs_cascade_rows():
    assert choose_direction([{"method": "A→B", "pass@1": 0.2}, {"method": "B→A", "pass@1": 0.3}]) == "B→A"
    with pytest.raises(ValueError, match="cascade rows"):
        choose_direction([{"method": "A", "pass@1": 1.0}])
