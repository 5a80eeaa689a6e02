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

from typing import Sequence

from scipy.stats import beta

from agon_env.game import AgonGame
from agon_env.rules import game_rates
from problems.record import Problem

from .config import EvalConfig
from .policy import Policy
from .rollouts import Rollouts


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact binomial interval for k successes in n trials."""
    if n <= 0:
        return (0.0, 1.0)
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def summary_row(name: str, correct: list[bool], lengths: list[int], greedy: list[bool] | None, **extra) -> dict:
    k, n = sum(correct), len(correct)
    lo, hi = clopper_pearson(k, n)
    row = {"method": name, "pass@1": k / max(n, 1), "ci_low": lo, "ci_high": hi, "n": n,
           "mean_length": sum(lengths) / max(len(lengths), 1)}
    if greedy is not None:
        row["greedy"] = sum(greedy) / max(len(greedy), 1)
    return {**row, **extra}


def evaluate_single(policy: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig, seed: int) -> dict:
    """pass@1 of one model from the plain (drafter) prompt."""
    prompts = game.drafter_prompts(problems)
    gens = Rollouts.sample(policy, problems, prompts, cfg.samples, cfg.params(), seed)
    _, verdicts = game.grade_solo(gens.each_problem, gens.texts)
    greedy = None
    if cfg.greedy:
        g1 = [gs[0].text for gs in policy.generate(prompts, 1, cfg.params(greedy=True), seed=seed)]
        greedy = [v.correct for v in game.grade_solo(problems, g1)[1]]
    return summary_row(policy.name, [v.correct for v in verdicts], [len(g.completion_ids) for g in gens.gens], greedy)


def evaluate_cascade(drafter: Policy, answerer: Policy, problems: Sequence[Problem], game: AgonGame,
                     cfg: EvalConfig, seed: int) -> dict:
    """pass@1 of `answerer` after reading `drafter`'s draft summary (one draft per answer).

    Also reports the drafter's own accuracy on those drafts, and the conversion rate
    (answer right where the draft was wrong) and keep rate (right where the draft was right).
    """
    def run(params, n):
        drafts = Rollouts.sample(drafter, problems, game.drafter_prompts(problems), n, params, seed)
        reps = drafts.each_problem
        answers = Rollouts.sample(answerer, reps, game.challenger_prompts(reps, drafts.texts), 1, params, seed + 1)
        return answers, game.score(reps, drafts.texts, answers.texts)

    answers, results = run(cfg.params(), cfg.samples)
    rates = game_rates(results)
    greedy = None
    if cfg.greedy:
        greedy = [r.challenger_info["correct"] for r in run(cfg.params(greedy=True), 1)[1]]
    return summary_row(
        f"{drafter.name}→{answerer.name}", [r.challenger_info["correct"] for r in results],
        [len(a.completion_ids) for a in answers.gens], greedy,
        drafter_pass=rates["drafter_pass"], conversion=rates["conversion"], keep=rates["keep"],
    )


def evaluate_pair(a: Policy, b: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig,
                  seed: int) -> list[dict]:
    """Rows for A alone, B alone, cascade A→B and cascade B→A (the paper's checklist)."""
    return [evaluate_single(a, problems, game, cfg, seed), evaluate_single(b, problems, game, cfg, seed),
            evaluate_cascade(a, b, problems, game, cfg, seed), evaluate_cascade(b, a, problems, game, cfg, seed)]


def choose_direction(validation_rows: list[dict]) -> str:
    """The cascade direction with the higher validation pass@1 (ties: the first listed)."""
    cascades = [r for r in validation_rows if "→" in r["method"]]
    if not cascades:
        raise ValueError("choose_direction needs cascade rows (method names containing '→')")
    return max(cascades, key=lambda r: r["pass@1"])["method"]
