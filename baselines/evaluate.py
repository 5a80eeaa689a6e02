"""Evaluation: pass@1 with intervals for one model, and for a pair run as a cascade.

pass@1 is the mean correctness over `samples` completions per problem at the evaluation
temperature; its 95% Clopper-Pearson interval treats the problems × samples as Bernoulli
trials (samples of one problem are correlated, so the interval is slightly optimistic
when samples > 1). Every row also keeps `per_problem`, each problem's mean correctness in
problem order, so two evaluations of the same problems compare problem by problem:
`paired_bootstrap` gives the change with an interval that resamples problems. Greedy
accuracy is reported beside it. Grading goes through the game's own grader
(`AgonGame.grade_solo` / `AgonGame.score`).

Problems are sampled in chunks of `CHUNK` (a progress bar ticks per chunk); chunk i draws
with `chunk_seed(seed, i)`, so a result depends on the seed and the problems alone. Under torchrun
the chunks are dealt round-robin over the ranks and their results gathered in chunk order, so every
rank gets the rows one process would (`baselines.distributed`).

The cascade is the paper's inference: one model drafts, the other reads the draft's
summary and answers; the answerer is graded. Its direction is chosen on the validation
split (`choose_direction`) and only then reported on the test split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.stats import beta
from tqdm import tqdm

from agon_env.game import AgonGame
from agon_env.rules import game_rates
from problems.record import Problem

from . import distributed as dist
from .config import EvalConfig
from .policy import Policy
from .rollouts import Rollouts

CHUNK = 64  # problems per sampling call: one progress tick, and a bounded batch


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact binomial interval for k successes in n trials."""
    if n <= 0:
        return (0.0, 1.0)
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def paired_bootstrap(before: Sequence[float], after: Sequence[float], n_boot: int = 10_000, seed: int = 0,
                     alpha: float = 0.05) -> dict:
    """Mean per-problem change `after − before`, with a percentile bootstrap interval that
    resamples problems (both lists in the same problem order).

    Returns {'delta', 'ci_low', 'ci_high', 'n'}; deterministic in `seed`.
    """
    if len(before) != len(after) or not before:
        raise ValueError(f"paired_bootstrap needs two non-empty per-problem lists of equal length, "
                         f"got {len(before)} before and {len(after)} after")
    if not (isinstance(n_boot, int) and n_boot >= 1) or not 0 < alpha < 1:
        raise ValueError(f"paired_bootstrap needs n_boot a positive int and 0 < alpha < 1, got n_boot={n_boot!r}, "
                         f"alpha={alpha!r}")
    d = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    rng = np.random.default_rng(seed)
    block = max(1, 2_000_000 // len(d))  # resamples per draw: bounded memory for long pooled lists
    means = np.concatenate([d[rng.integers(0, len(d), size=(min(block, n_boot - i), len(d)))].mean(axis=1)
                            for i in range(0, n_boot, block)])
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return {"delta": float(d.mean()), "ci_low": float(lo), "ci_high": float(hi), "n": len(d)}


def summary_row(name: str, correct: list[bool], lengths: list[int], greedy: list[bool] | None,
                samples: int | None = None, **extra) -> dict:
    """A result row; with `samples` (completions per problem, problem-major in `correct`) it
    also carries `per_problem`, each problem's mean correctness."""
    k, n = sum(correct), len(correct)
    lo, hi = clopper_pearson(k, n)
    row = {"method": name, "pass@1": k / max(n, 1), "ci_low": lo, "ci_high": hi, "n": n,
           "mean_length": sum(lengths) / max(len(lengths), 1)}
    if greedy is not None:
        row["greedy"] = sum(greedy) / max(len(greedy), 1)
    if samples is not None:
        if samples < 1 or n % samples:
            raise ValueError(f"summary_row {name!r}: {n} results are not a whole number of groups of {samples} samples")
        row["per_problem"] = [sum(correct[i:i + samples]) / samples for i in range(0, n, samples)]
    return {**row, **extra}


def chunk_seed(seed: int, chunk: int) -> int:
    """The sampling seed of problem chunk `chunk`: `seed` itself for the first (an evaluation of
    up to CHUNK problems draws as one call would), a hash of both for the others."""
    return seed if chunk == 0 else int(np.random.SeedSequence([seed, chunk]).generate_state(1)[0])


def _chunks(problems: Sequence[Problem]) -> dict[int, list[Problem]]:
    """This rank's chunks of `problems`, by chunk index."""
    return {i // CHUNK: list(problems[i:i + CHUNK]) for i in range(0, len(problems), CHUNK) if dist.my_chunk(i // CHUNK)}


def _progress(chunks: dict[int, list[Problem]], desc: str, progress: bool):
    """(chunk index, its problems) for every chunk, with a progress bar over the problems."""
    # disable=None: the bar is off where stderr is not a terminal (a job's log, a test); rank 0's alone shows
    with tqdm(total=sum(map(len, chunks.values())), desc=desc, unit="problem", leave=False, dynamic_ncols=True,
              disable=None if progress and dist.is_main() else True) as bar:
        for i, part in chunks.items():
            yield i, part
            bar.update(len(part))


@dataclass
class Drafts:
    """A model's evaluation completions from the plain (drafter) prompt, per chunk: what it is graded on
    alone and what a cascade's answerer reads (the same prompts, chunks and seeds: the same draws)."""

    sampled: dict[int, Rollouts]
    """`samples` completions per problem at the evaluation temperature"""
    greedy: dict[int, Rollouts] | None
    """one greedy completion per problem (None when the evaluation has no greedy column)"""

    @classmethod
    def sample(cls, policy: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig, seed: int,
               progress: bool = True) -> "Drafts":
        def run(params, n, desc):
            return {i: Rollouts.sample(policy, part, game.drafter_prompts(part), n, params, chunk_seed(seed, i))
                    for i, part in _progress(_chunks(problems), desc, progress)}
        return cls(run(cfg.params(), cfg.samples, f"eval {policy.name}"),
                   run(cfg.params(greedy=True), 1, f"eval {policy.name} (greedy)") if cfg.greedy else None)


def evaluate_single(policy: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig, seed: int,
                    progress: bool = True, drafts: Drafts | None = None) -> dict:
    """pass@1 of one model from the plain (drafter) prompt; `drafts`: its `Drafts` already sampled."""
    d = drafts or Drafts.sample(policy, problems, game, cfg, seed, progress)

    def graded(chunks):
        return dist.gather_chunks({i: ([v.correct for v in game.grade_solo(r.each_problem, r.texts)[1]],
                                       [len(g.completion_ids) for g in r.gens]) for i, r in chunks.items()})

    correct, lengths = graded(d.sampled)
    greedy = None if d.greedy is None else graded(d.greedy)[0]
    return summary_row(policy.name, correct, lengths, greedy, samples=cfg.samples)


def evaluate_cascade(drafter: Policy, answerer: Policy, problems: Sequence[Problem], game: AgonGame,
                     cfg: EvalConfig, seed: int, progress: bool = True, drafts: Drafts | None = None) -> dict:
    """pass@1 of `answerer` after reading `drafter`'s draft summary (one draft per answer); `drafts`: the
    drafter's `Drafts` already sampled.

    Also reports the drafter's own accuracy on those drafts, and the conversion rate
    (answer right where the draft was wrong) and keep rate (right where the draft was right).
    """
    name = f"{drafter.name}→{answerer.name}"
    d = drafts or Drafts.sample(drafter, problems, game, cfg, seed, progress)

    def run(chunks, params, desc):
        parts = {}
        for i, _ in _progress({i: r.problems for i, r in chunks.items()}, desc, progress):
            reps, texts = chunks[i].each_problem, chunks[i].texts
            answers = Rollouts.sample(answerer, reps, game.challenger_prompts(reps, texts), 1, params,
                                      chunk_seed(seed + 1, i))
            parts[i] = ([len(a.completion_ids) for a in answers.gens], game.score(reps, texts, answers.texts))
        return dist.gather_chunks(parts)

    lengths, results = run(d.sampled, cfg.params(), f"eval {name}")
    rates = game_rates(results)
    greedy = None
    if d.greedy is not None:
        greedy = [r.challenger_info["correct"] for r in run(d.greedy, cfg.params(greedy=True), f"eval {name} (greedy)")[1]]
    return summary_row(name, [r.challenger_info["correct"] for r in results], lengths, greedy, samples=cfg.samples,
                       drafter_pass=rates["drafter_pass"], conversion=rates["conversion"], keep=rates["keep"])


def evaluate_pair(a: Policy, b: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig,
                  seed: int, progress: bool = True) -> list[dict]:
    """Rows for A alone, B alone, cascade A→B and cascade B→A (the paper's checklist). Each model's drafts
    are sampled once: its own row grades them, and its cascade's answerer reads them."""
    da, db = (Drafts.sample(p, problems, game, cfg, seed, progress) for p in (a, b))
    return [evaluate_single(a, problems, game, cfg, seed, progress, da),
            evaluate_single(b, problems, game, cfg, seed, progress, db),
            evaluate_cascade(a, b, problems, game, cfg, seed, progress, da),
            evaluate_cascade(b, a, problems, game, cfg, seed, progress, db)]


def choose_direction(validation_rows: list[dict]) -> str:
    """The cascade direction with the higher validation pass@1 (ties: the first listed)."""
    cascades = [r for r in validation_rows if "→" in r["method"]]
    if not cascades:
        raise ValueError("choose_direction needs cascade rows (method names containing '→')")
    return max(cascades, key=lambda r: r["pass@1"])["method"]
