"""What a GRPO batch's groups can teach: which groups carry signal, and from what.

A group's advantage is zero when its rewards are all equal. A group whose correctness is
mixed carries the signal the method is after; a group whose correctness is constant but
whose rewards still vary (`format_only`) gets its spread from the format term, and then
reinforces formatted wrong answers over malformed ones. In an Agon challenger's groups the
spread can also come from terms that depend on the draft each answer read (the conversion
bonus between right answers to right and to wrong drafts, the length tiebreak), which this
count cannot tell from format. The learners log these per step, and `benchmarks.headroom`
measures them before any training.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import torch


def group_stats(rewards: torch.Tensor, correct: torch.Tensor, families: Sequence[str] | None = None,
                prefix: str = "") -> dict[str, float]:
    """Fractions of the [P, n] groups (one row each) that are mixed by correctness, spread by
    format only, without spread, all right and all wrong; with `families` (one name per group),
    also each family's mean correctness (a group whose family is '' counts in no family).

    A group has spread when its largest and smallest rewards differ (not `std > 0`, which
    float rounding makes positive for some equal rewards, e.g. eight 0.7s)."""
    if rewards.shape != correct.shape or rewards.dim() != 2 or rewards.numel() == 0:
        raise ValueError(f"group_stats needs non-empty [P, n] rewards and correctness of one shape, got "
                         f"{tuple(rewards.shape)} and {tuple(correct.shape)}")
    c = correct.bool()
    right, wrong = c.all(-1), (~c).all(-1)
    spread = rewards.amax(-1) > rewards.amin(-1)
    frac = lambda m: float(m.float().mean())  # noqa: E731
    out = {f"{prefix}groups/mixed_correct": frac(~right & ~wrong), f"{prefix}groups/format_only": frac((right | wrong) & spread),
           f"{prefix}groups/zero_std": frac(~spread), f"{prefix}groups/all_right": frac(right),
           f"{prefix}groups/all_wrong": frac(wrong)}
    if families is not None:
        if len(families) != len(c):
            raise ValueError(f"group_stats got {len(families)} families for {len(c)} groups")
        by = defaultdict(list)
        for fam, row in zip(families, c):
            by[fam].append(row)
        out.update({f"{prefix}pass/family/{fam}": frac(torch.stack(rows)) for fam, rows in sorted(by.items()) if fam})
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from c right of n samples: 1 − C(n−c, k) / C(n, k) (Chen et al., 2021)."""
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n samples, got k={k}, n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n right samples, got c={c}, n={n}")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):  # C(n−c, k)/C(n, k) as a product, no big factorials
        miss *= 1.0 - k / i
    return 1.0 - miss
