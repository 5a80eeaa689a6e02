"""The optional reasoning-gym adapter (skipped only when reasoning-gym is not installed)."""

import pytest

from agon_env.grading import MathGrader
from problems import load
from problems.generate import normalise

pytest.importorskip("reasoning_gym")


def test_items_become_problems_that_our_grader_accepts():
    problems = load("reasoning_gym", task="basic_arithmetic", n=30, seed=1, split_as="test", difficulty_as=1.0)
    assert 25 <= len(problems) <= 30  # repeats are dropped
    assert {p.split for p in problems} == {"test"} and {p.source for p in problems} == {"reasoning_gym:basic_arithmetic"}
    grader = MathGrader(workers=1)
    for p in problems:
        assert p.difficulty == 1.0 and p.metadata["task"] == "basic_arithmetic"
        assert grader.grade(p, f"<answer>{p.answer}</answer>").correct
        assert not grader.grade(p, f"<answer>{int(p.answer) + 1}</answer>").correct


def test_deterministic_and_exclude_keeps_splits_disjoint():
    a = load("reasoning_gym", task="chain_sum", n=40, seed=3)
    assert [p.to_dict() for p in a] == [p.to_dict() for p in load("reasoning_gym", task="chain_sum", n=40, seed=3)]
    b = load("reasoning_gym", task="chain_sum", n=40, seed=3, exclude=[p.question for p in a[:10]])
    assert {normalise(p.question) for p in b}.isdisjoint({normalise(p.question) for p in a[:10]})
    assert len(b) == len(a) - 10
