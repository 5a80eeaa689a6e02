"""Group diagnostics and pass@k."""

from itertools import combinations

import pytest
import torch

from baselines.diagnostics import group_stats, pass_at_k


def test_group_kinds_are_told_apart():
    r = torch.tensor([[2.5, 0.5, 0.5, 0.5],   # mixed correctness
                      [0.5, 0.0, 0.5, 0.5],   # all wrong, one malformed: format-only spread
                      [2.5, 2.5, 2.5, 2.5],   # all right
                      [0.5, 0.5, 0.5, 0.5]])  # all wrong, no spread
    c = torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]]).bool()
    s = group_stats(r, c, ["add", "add", "mul", "mul"], prefix="drafter/")
    assert s["drafter/groups/mixed_correct"] == 0.25 and s["drafter/groups/format_only"] == 0.25
    assert s["drafter/groups/zero_std"] == 0.5 and s["drafter/groups/all_right"] == 0.25
    assert s["drafter/groups/all_wrong"] == 0.5
    assert s["drafter/pass/family/add"] == 1 / 8 and s["drafter/pass/family/mul"] == 0.5


def test_one_group_and_bad_shapes():
    s = group_stats(torch.tensor([[1.0, 0.0]]), torch.tensor([[True, False]]))
    assert s["groups/mixed_correct"] == 1.0 and s["groups/zero_std"] == 0.0
    s = group_stats(torch.tensor([[2.5, 2.0, 2.5]]), torch.tensor([[True, True, True]]))  # one right answer unformatted
    assert s["groups/format_only"] == 1.0 and s["groups/all_right"] == 1.0 and s["groups/mixed_correct"] == 0.0
    with pytest.raises(ValueError, match="non-empty"):
        group_stats(torch.zeros(0, 4), torch.zeros(0, 4).bool())
    with pytest.raises(ValueError, match="one shape"):
        group_stats(torch.zeros(2, 3), torch.zeros(2, 2).bool())
    with pytest.raises(ValueError, match="3 families for 2 groups"):
        group_stats(torch.zeros(2, 3), torch.zeros(2, 3).bool(), ["a", "b", "c"])


def test_equal_rewards_have_no_spread_despite_rounding():
    r = torch.full((2, 8), 0.7)  # std() of eight float32 0.7s is about 6e-8, not 0
    s = group_stats(r, torch.zeros(2, 8).bool(), ["linear", ""])
    assert s["groups/zero_std"] == 1.0 and s["groups/format_only"] == 0.0
    assert list(k for k in s if k.startswith("pass/")) == ["pass/family/linear"]  # '' counts in no family


@pytest.mark.parametrize("n", [1, 4, 7])
def test_pass_at_k_is_the_subset_probability(n):
    for c in range(n + 1):
        samples = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            subsets = list(combinations(samples, k))
            assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_pass_at_k_errors():
    with pytest.raises(ValueError, match="k=5, n=4"):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError, match="c=5"):
        pass_at_k(4, 5, 1)
