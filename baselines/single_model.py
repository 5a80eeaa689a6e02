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
from typing import Sequence

import tyro

from agon_env.game import AgonGame
from agon_env.prompts import INSTRUCTIONS, PromptTemplate
from benchmarks.report import markdown_table
from problems.record import Problem

from .cascade import is_run_dir, load_run, run_args
from .common import CommonArgs, load_split, seed_everything
from .evaluate import EvalConfig, InferenceArgs, evaluate_cascade
from .policy import Policy, load_policy

METHODS = ("refine", "self_cascade")

# The second pass of self-refinement, per base template; {summary} is the model's own draft, answer kept.
REFINE = {
    "default": (
        "Below is your own earlier solution to this problem, with its final answer. It may be "
        "wrong. Check every step critically, fix any mistake, and solve the problem again.\n\n"
        "Your earlier solution:\n{summary}\n\n" + INSTRUCTIONS + "\n\nProblem: {question}"
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
    split: str = "test"
    """split evaluated: 'validation' or 'test'"""


def refine_game(game: AgonGame) -> AgonGame:
    """The game whose challenger prompt is the self-refinement prompt: same drafter prompt,
    same grader, and the draft shown with its answer (thinking still dropped)."""
    t = game.template
    if t.name not in REFINE:
        raise ValueError(f"no self-refinement prompt for template {t.name!r}; known: {sorted(REFINE)}")
    return replace(game, summary="with_answer",
                   template=PromptTemplate(f"{t.name}-refine", t.drafter, REFINE[t.name], t.system))


def evaluate_self_refine(policy: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig) -> dict:
    """pass@1 after the model revises its own answered draft."""
    return {**evaluate_cascade(policy, policy, problems, refine_game(game), cfg), "method": f"{policy.name} self-refine"}


def evaluate_self_cascade(policy: Policy, problems: Sequence[Problem], game: AgonGame, cfg: EvalConfig) -> dict:
    """pass@1 after the model reads its own draft's summary (answer withheld) and answers."""
    return {**evaluate_cascade(policy, policy, problems, game, cfg), "method": f"{policy.name} self-cascade"}


EVALUATORS = {"refine": evaluate_self_refine, "self_cascade": evaluate_self_cascade}


def main(args: Args) -> list[dict]:
    t0 = time.perf_counter()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods or any(m not in METHODS for m in methods):
        raise SystemExit(f"error: --methods must be a comma-separated subset of {METHODS}, got {args.methods!r}")
    if args.split not in ("validation", "test"):
        raise SystemExit(f"error: --split must be 'validation' or 'test', got {args.split!r}")
    seed_everything(args.seed, args.threads)
    if is_run_dir(args.model):
        policies = load_run(args.model, args.device, args.backend)
        if len(policies) != 1:
            raise SystemExit(f"error: --model {args.model!r} is a pair run; pass a grpo run or one model")
        policy, common = next(iter(policies.values())), run_args(args.model)
    else:
        common = CommonArgs(model=args.model, template=args.template)
        common.validate("group-size", 2)
        policy = load_policy(args.model, device=args.device, backend=args.backend, seed=args.seed, reference=False)
        policy.name = args.model
    if args.template != "auto":
        common = replace(common, template=args.template)
    game = common.game()
    problems = load_split(replace(common, problems=args.problems), args.split, args.eval_tier, args.eval_problems)
    cfg = args.eval_config(greedy=False)
    rows = [EVALUATORS[m](policy, problems, game, cfg) for m in methods]

    table = markdown_table([{"method": r["method"], "pass@1": f"{100 * r['pass@1']:.1f}",
                             "95% CI": f"[{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]",
                             "first pass": f"{100 * r['drafter_pass']:.1f}", "length (tokens)": f"{r['mean_length']:.1f}",
                             "conversion / keep": f"{r['conversion']:.2f} / {r['keep']:.2f}"} for r in rows])
    note = f"{args.split} split, {args.eval_tier} tier, {len(problems)} problems × {args.eval_samples} samples; " \
           f"{time.perf_counter() - t0:.0f} s wall."
    args.write_outputs("single_model", "Single-model two-pass", {"rows": rows}, table, note)
    return rows


if __name__ == "__main__":
    main(tyro.cli(Args))
