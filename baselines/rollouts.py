"""`Rollouts`: n completions for each of P problems, the [P, n] shape of a GRPO batch.

Completions are kept problem-major (all n of problem 0, then problem 1, ...), the order
`Policy.generate` returns them in, so `grid` turns any per-completion list into the
[P, n] tensor whose rows are the groups that advantages are normalised within.

Under torchrun, `index` gives each problem's position in the step's global batch; each problem
then draws from its own generator seeded by `child_seed(seed, index)` (the problems still share
one batched decode), so its tokens are the same on whichever rank, beside whichever problems, it
is sampled (see `baselines.distributed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Sequence

import torch

from problems.record import Problem

from .policy import Generation, Policy, SamplingParams, child_seed


@dataclass
class Rollouts:
    problems: list[Problem]
    """the P problems"""
    n: int
    """completions per problem"""
    gens: list[Generation]
    """P × n completions, problem-major"""
    index: list[int] | None = None
    """each problem's index in the step's global batch (under torchrun; None in one process)"""

    @classmethod
    def sample(cls, policy: Policy, problems: Sequence[Problem], prompts: Sequence[str], n: int,
               params: SamplingParams, seed: int | None, index: Sequence[int] | None = None) -> "Rollouts":
        """`n` completions of `policy` per prompt (one prompt per problem). With `index`, consecutive
        prompts of one index (a problem, or the challenger's reads of its drafts) sample as one call
        seeded by (seed, index) (`generate_seeded`, which batches the calls); without it, all in one
        call seeded by `seed`."""
        if index is None:
            groups = policy.generate(list(prompts), n, params, seed)
        else:
            groups = policy.generate_seeded([([prompts[i] for i in run], child_seed(seed, j))
                                             for j, run in groupby(range(len(prompts)), key=lambda i: index[i])],
                                            n, params)
        return cls(list(problems), n, [g for gs in groups for g in gs[:n]], None if index is None else list(index))

    @property
    def each_problem(self) -> list[Problem]:
        """The problem of every completion: each problem repeated n times."""
        return [p for p in self.problems for _ in range(self.n)]

    @property
    def each_index(self) -> list[int] | None:
        """The global batch index of every completion's problem (None in one process)."""
        return None if self.index is None else [i for i in self.index for _ in range(self.n)]

    @property
    def texts(self) -> list[str]:
        return [g.text for g in self.gens]

    def grid(self, values: Sequence[float]) -> torch.Tensor:
        """Per-completion values as a float [P, n] tensor: one row per group."""
        return torch.tensor(values, dtype=torch.float).view(len(self.problems), self.n)

    def mean_length(self) -> float:
        """Mean completion length in tokens."""
        return sum(len(g.completion_ids) for g in self.gens) / max(len(self.gens), 1)

    def __len__(self) -> int:
        return len(self.gens)


