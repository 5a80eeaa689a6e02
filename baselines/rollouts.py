"""`Rollouts`: n completions for each of P problems, the [P, n] shape of a GRPO batch.

Completions are kept problem-major (all n of problem 0, then problem 1, ...), the order
`Policy.generate` returns them in, so `grid` turns any per-completion list into the
[P, n] tensor whose rows are the groups that advantages are normalised within.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from problems.record import Problem

from .policy import Generation, Policy, SamplingParams


@dataclass
class Rollouts:
    problems: list[Problem]
    """the P problems"""
    n: int
    """completions per problem"""
    gens: list[Generation]
    """P × n completions, problem-major"""

    @classmethod
    def sample(cls, policy: Policy, problems: Sequence[Problem], prompts: Sequence[str], n: int,
               params: SamplingParams, seed: int | None) -> "Rollouts":
        """`n` completions of `policy` per prompt (one prompt per problem)."""
        groups = policy.generate(list(prompts), n, params, seed)
        return cls(list(problems), n, [g for gs in groups for g in gs[:n]])

    @property
    def each_problem(self) -> list[Problem]:
        """The problem of every completion: each problem repeated n times."""
        return [p for p in self.problems for _ in range(self.n)]

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
