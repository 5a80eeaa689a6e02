"""`Rollouts`: the [P, n] shape of a GRPO batch, owned in one place."""

import pytest

from baselines.policy import Generation
from baselines.rollouts import Rollouts
from problems.record import Problem

from .scripted import ScriptedPolicy


def test_sample_keeps_problem_major_order_and_grids_by_group():
    ps = [Problem(id=str(i), question=f"q{i}", answer="1") for i in range(3)]
    pol = ScriptedPolicy("M", lambda p: p * 2)
    r = Rollouts.sample(pol, ps, [p.question for p in ps], 2, None, 0)
    assert len(r) == 6 and [p.id for p in r.each_problem] == ["0", "0", "1", "1", "2", "2"]
    assert r.texts == ["q0q0", "q0q0", "q1q1", "q1q1", "q2q2", "q2q2"]
    grid = r.grid(range(6))
    assert grid.shape == (3, 2) and grid[1].tolist() == [2.0, 3.0]  # row i holds problem i's group
    assert r.mean_length() == 4.0


def test_grid_refuses_a_wrong_count():
    r = Rollouts([Problem(id="p", question="q", answer="1")], 2, [Generation("", "x", [], [1], [0.0], True)] * 2)
    with pytest.raises(RuntimeError):
        r.grid([1.0, 2.0, 3.0])
