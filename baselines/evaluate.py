"""Evaluation: pass@1 with intervals for one model, and for a pair run as a cascade.

pass@1 is the mean correctness over `samples` completions per problem at the evaluation
temperature; its 95% Clopper-Pearson interval treats the problems × samples as Bernoulli
trials (samples of one problem are correlated, so the interval is slightly optimistic
when samples > 1). Greedy accuracy is reported beside it. Grading goes through the
game's own grader (`AgonGame.grade_solo` / `AgonGame.score`).

The cascade is the paper's inference: one model drafts, the other reads the draft's
summary and answers; the answerer is graded. Its direction is chosen on the validation
split (`choose_direction`) and only then reported on the test split.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from scipy.stats import beta

from agon_env.game import AgonGame
from agon_env.rules import game_rates
from problems.record import Problem

from .policy import Policy, SamplingParams


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact binomial interval for k successes in n trials."""
    if n <= 0:
        return (0.0, 1.0)
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


@dataclass
class EvalConfig:
    """How held-out pass@1 is measured."""

    samples: int = 4
    """completions per problem at the evaluation temperature (pass@1 is their mean)"""
    temperature: float = 0.7
    """sampling temperature for pass@1"""
    top_p: float = 1.0
    """nucleus sampling for pass@1"""
    max_new_tokens: int = 128
    """completion length limit in tokens"""
    greedy: bool = True
    """also report greedy accuracy (one extra completion per problem)"""
    seed: int = 1234
    """sampling seed, fixed so before/after numbers use the same draws"""

    def params(self, greedy: bool = False) -> SamplingParams:
        return SamplingParams(self.temperature, self.top_p, self.max_new_tokens, greedy)


@dataclass
class InferenceArgs:
    """Options shared by the inference-only methods (cascade, MoA, self-refinement)."""

    problems: str = "arith"
    """problem source: 'arith' (bundled), a .jsonl path, or 'deepmath:PATH'"""
    eval_tier: str = "hard"
    """difficulty tier evaluated ('all' for every tier)"""
    eval_problems: int = 300
    """problems evaluated per split"""
    eval_samples: int = 4
    """samples per problem at the evaluation temperature (pass@1 is their mean)"""
    eval_temperature: float = 0.7
    """sampling temperature"""
    max_new_tokens: int = 128
    """completion length limit in tokens, per model call"""
    template: str = "auto"
    """prompt template: 'auto' (a run's own, 'compact' for the tiny models, else 'default'), or a template name"""
    seed: int = 0
    """evaluation sampling seed (the learners evaluate with seed + 10000)"""
    threads: int = 2
    """torch CPU threads"""
    device: str = "auto"
    """'auto', 'cpu' or 'cuda'"""
    backend: str = "auto"
    """generation backend: 'auto', 'hf' or 'vllm'"""
    out_dir: str = "runs"
    """parent of the new <tool>-<time> directory its JSON and markdown go to"""

    def write_outputs(self, tool: str, title: str, payload: dict, table: str, note: str) -> Path:
        """Print the table, then write `<tool>.json` and `<tool>.md` into a new `out_dir/<tool>-<time>/`."""
        print(f"\n{table}\n\n- {note}")
        out = Path(self.out_dir) / f"{tool}-{time.strftime('%Y%m%d-%H%M%S')}"
        out.mkdir(parents=True, exist_ok=True)
        model = getattr(self, "model", "")
        (out / f"{tool}.json").write_text(json.dumps({"model": model, **payload}, indent=2))
        (out / f"{tool}.md").write_text(f"# {title}: {model}\n\n{table}\n\n- {note}\n")
        print(f"\noutputs in {out}: {tool}.json, {tool}.md")
        return out

    def eval_config(self, greedy: bool) -> "EvalConfig":
        return EvalConfig(samples=self.eval_samples, temperature=self.eval_temperature,
                          max_new_tokens=self.max_new_tokens, greedy=greedy, seed=self.seed)


def summary_row(name: str, correct: list[bool], lengths: list[int], greedy: list[bool] | None, **extra) -> dict:
    k, n = sum(correct), len(correct)
    lo, hi = clopper_pearson(k, n)
    row = {"method": name, "pass@1": k / max(n, 1), "ci_low": lo, "ci_high": hi, "n": n,
           "mean_length": sum(lengths) / max(len(lengths), 1)}
    if greedy is not None:
        row["greedy"] = sum(greedy) / max(len(greedy), 1)
    return {**row, **extra}


def _flat(prompts_by_problem: list[list], samples: int) -> list:
    return [g for gens in prompts_by_problem for g in gens[:samples]]


def evaluate_single(policy: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig) -> dict:
    """pass@1 of one model from the plain (drafter) prompt."""
    prompts = game.drafter_prompts(problems)
    gens = _flat(policy.generate(prompts, cfg.samples, cfg.params(), seed=cfg.seed), cfg.samples)
    reps = [p for p in problems for _ in range(cfg.samples)]
    _, verdicts = game.grade_solo(reps, [g.text for g in gens])
    greedy = None
    if cfg.greedy:
        g1 = [gs[0].text for gs in policy.generate(prompts, 1, cfg.params(greedy=True), seed=cfg.seed)]
        greedy = [v.correct for v in game.grade_solo(problems, g1)[1]]
    return summary_row(policy.name, [v.correct for v in verdicts], [len(g.completion_ids) for g in gens], greedy)


def evaluate_cascade(drafter: Policy, answerer: Policy, problems: Sequence[Problem], game: AgonGame,
                     cfg: EvalConfig) -> dict:
    """pass@1 of `answerer` after reading `drafter`'s draft summary (one draft per answer).

    Also reports the drafter's own accuracy on those drafts, and the conversion rate
    (answer right where the draft was wrong) and keep rate (right where the draft was right).
    """
    def run(params, n):
        drafts = _flat(drafter.generate(game.drafter_prompts(problems), n, params, seed=cfg.seed), n)
        reps_n = [p for p in problems for _ in range(n)]
        answers = [gs[0] for gs in answerer.generate(game.challenger_prompts(reps_n, [d.text for d in drafts]), 1,
                                                     params, seed=cfg.seed + 1)]
        return answers, game.score(reps_n, [d.text for d in drafts], [a.text for a in answers])

    answers, results = run(cfg.params(), cfg.samples)
    rates = game_rates(results)
    greedy = None
    if cfg.greedy:
        greedy = [r.challenger_info["correct"] for r in run(cfg.params(greedy=True), 1)[1]]
    return summary_row(
        f"{drafter.name}→{answerer.name}", [r.challenger_info["correct"] for r in results],
        [len(a.completion_ids) for a in answers], greedy,
        drafter_pass=rates["drafter_pass"], conversion=rates["conversion"], keep=rates["keep"],
    )


def evaluate_pair(a: Policy, b: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig) -> list[dict]:
    """Rows for A alone, B alone, cascade A→B and cascade B→A (the paper's checklist)."""
    return [evaluate_single(a, problems, game, cfg), evaluate_single(b, problems, game, cfg),
            evaluate_cascade(a, b, problems, game, cfg), evaluate_cascade(b, a, problems, game, cfg)]


def choose_direction(validation_rows: list[dict]) -> str:
    """The cascade direction with the higher validation pass@1 (ties: the first listed)."""
    cascades = [r for r in validation_rows if "→" in r["method"]]
    if not cascades:
        raise ValueError("choose_direction needs cascade rows (method names containing '→')")
    return max(cascades, key=lambda r: r["pass@1"])["method"]
