"""One model, two passes: self-refinement and the two-pass self-cascade (the paper's baselines).

    python -m baselines.single_model --model runs/grpo-s0-...       # a GRPO run dir (final checkpoint)
    python -m baselines.single_model --model tiny:a --methods refine

- **self-cascade**: the model drafts, then answers again after reading its own draft's
  summary through the challenger channel (`AgonGame.challenger_prompts`: thinking dropped,
  answer withheld). Applied to a GRPO model this is the paper's "GRPO two-pass self-cascade".
- **self-refinement**: the model drafts, then revises after reading its own draft *with
  its answer* (summary mode `with_answer`) under a revise-your-answer prompt.

Both are `evaluate_cascade(model, model, ...)`, so they report the same columns as a pair's
cascade, conversion (second pass right where the first was wrong) and keep included.
The tiny character models know only two prompt layouts, so their refinement prompt is the
challenger layout with the answer left in; the LLM template asks for a revision in words.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal, Sequence

from agon_env.game import AgonGame
from agon_env.prompts import CODE_INSTRUCTIONS, INSTRUCTIONS, PromptTemplate
from problems.record import Problem

from .config import EvalConfig, InferenceArgs, LearnerArgs, policy_template
from .evaluate import evaluate_cascade
from .policy import Policy, load_policy
from .report import markdown_table
from .runs import is_run_dir, load_run, run_args

METHODS = ("refine", "self_cascade")

# The second pass of self-refinement, per base template; {summary} is the model's own draft, answer kept.
REFINE = {
    "default": (
        "Below is your own earlier solution to this problem, with its final answer. It may be "
        "wrong. Check every step critically, fix any mistake, and solve the problem again.\n\n"
        "Your earlier solution:\n{summary}\n\n" + INSTRUCTIONS + "\n\nProblem: {question}"
    ),
    "code": (
        "Below is your own earlier solution to this problem, with its program. It may be wrong. Check "
        "every step critically, fix any mistake, and solve the problem again.\n\n"
        "Your earlier solution:\n{summary}\n\n" + CODE_INSTRUCTIONS + "\n\nProblem:\n{question}"
    ),
    "compact": "D:{summary}\nQ:{question}\nA:",
}


@dataclass
class Args(InferenceArgs):
    """Self-refinement and the two-pass self-cascade of one model."""

    model: str = "tiny:a"
    """a grpo run directory, 'tiny:a' / 'tiny:b', or a model path or hub name"""
    methods: str = "refine,self_cascade"
    """comma-separated: 'refine' (revise its own answer) and/or 'self_cascade' (read its own summary)"""
    split: Literal["validation", "test"] = "test"
    """split evaluated: 'validation' or 'test'"""
    unused_eval = {"split": "use --split", "greedy": "these methods report sampled pass@1 only"}


def refine_game(game: AgonGame) -> AgonGame:
    """The game whose challenger prompt is the self-refinement prompt: same drafter prompt,
    same grader, and the draft shown with its answer (thinking still dropped)."""
    t = game.template
    if t.name not in REFINE:
        raise ValueError(f"no self-refinement prompt for template {t.name!r}; known: {sorted(REFINE)}")
    return replace(game, summary="with_answer",
                   template=PromptTemplate(f"{t.name}-refine", t.drafter, REFINE[t.name], t.system))


def evaluate_self_refine(policy: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig,
                         seed: int) -> dict:
    """pass@1 after the model revises its own answered draft."""
    return {**evaluate_cascade(policy, policy, problems, refine_game(game), cfg, seed),
            "method": f"{policy.name} self-refine"}


def evaluate_self_cascade(policy: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig,
                          seed: int) -> dict:
    """pass@1 after the model reads its own draft's summary (answer withheld) and answers."""
    return {**evaluate_cascade(policy, policy, problems, game, cfg, seed), "method": f"{policy.name} self-cascade"}


EVALUATORS = {"refine": evaluate_self_refine, "self_cascade": evaluate_self_cascade}


def main(args: Args) -> list[dict]:
    t0 = time.perf_counter()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods or any(m not in METHODS for m in methods):
        raise SystemExit(f"error: --methods must be a comma-separated subset of {METHODS}, got {args.methods!r}")
    args.check()
    args.seed_everything()
    if is_run_dir(args.model):
        policies = load_run(args.model, args.device, args.backend)
        if len(policies) != 1:
            raise SystemExit(f"error: --model {args.model!r} is a pair run; pass a grpo run or one model")
        policy, run = next(iter(policies.values())), run_args(args.model)
    else:
        if len(args.model_spec().parts) != 1 or args.model == "tiny":
            raise SystemExit(f"error: --model {args.model!r} is a pair; pass one model ('tiny:a', 'tiny:b', a path, "
                             f"a hub name or a grpo run), or use `python -m baselines.cascade` for a pair")
        run = LearnerArgs(model=args.model, template=args.template)
        policy = load_policy(args.model_spec(), device=args.device, backend=args.backend, seed=args.seed,
                             reference=False, dtype=args.dtype)
        policy.name = args.model
    if args.template != "auto":
        run = replace(run, template=args.template)
    cfg = replace(args.with_run_eval(run), greedy=False)
    problems = replace(run, problems=args.problem_source(run)).load(args.split, cfg.tier, cfg.problems)
    # the problems' domain picks the 'auto' template ('code' for code problems), as the learners do
    game = run.game(problems[0].domain, policy_template([policy]), format_weight=run.format_weight)
    rows = [EVALUATORS[m](policy, problems, game, cfg, args.seed) for m in methods]

    table = markdown_table([{"method": r["method"], "pass@1": f"{100 * r['pass@1']:.1f}",
                             "95% CI": f"[{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]",
                             "first pass": f"{100 * r['drafter_pass']:.1f}", "length (tokens)": f"{r['mean_length']:.1f}",
                             "conversion / keep": f"{r['conversion']:.2f} / {r['keep']:.2f}"} for r in rows])
    note = f"{args.split} split, {cfg.tier} tier, {len(problems)} problems × {cfg.samples} samples; " \
           f"{time.perf_counter() - t0:.0f} s wall."
    args.write_outputs("single_model", "Single-model two-pass", {"rows": rows}, table, note)
    return rows


if __name__ == "__main__":
    main(Args.cli())
