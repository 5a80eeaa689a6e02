"""Untrained Mixture-of-Agents (Wang et al., 2024): several proposals, one aggregator.

    python -m baselines.moa                              # the tiny pair, both models propose, A aggregates
    python -m baselines.moa --proposers a --k 4          # Self-MoA: one model, four samples
    python -m baselines.moa --layers 2 --split validation

1. Proposers (both models of the pair, or one model sampled k times: Self-MoA) each
   answer the plain prompt; the k proposals are split evenly across the proposers.
2. With `--layers L > 1`, each later layer's proposers read all of the previous layer's
   proposals through the aggregate-and-synthesize prompt and propose again.
3. The aggregator reads the last layer's proposals (critically: they may be wrong) and
   writes the final answer, which the game's grader scores.

Proposals are shown through `AgonGame.summarize` (thinking dropped; by default the answer
kept, as MoA shows whole responses). Nothing is trained: this is the paper's "MoA,
untrained" row, the inference-time way to spend several models on one problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal, Sequence

from agon_env.game import AgonGame
from agon_env.prompts import INSTRUCTIONS
from problems.record import Problem

from .config import EvalConfig, InferenceArgs, SummaryMode
from .evaluate import summary_row
from .policy import Policy
from .report import markdown_table
from .rollouts import Rollouts
from .runs import load_models

# Aggregate-and-synthesize prompts per base template. `{proposals}` is filled by `PROPOSAL`.
AGGREGATE = {
    "default": (
        "You have been given {k} candidate solutions to the problem below, written by other "
        "solvers. Critically evaluate them: some or all may be wrong. Do not simply copy or vote; "
        "synthesize a single correct solution of your own.\n\n{proposals}\n" + INSTRUCTIONS + "\n\nProblem: {question}"
    ),
    # The tiny models know the challenger layout "D:{summary}\nQ:..."; MoA stacks one D: line per proposal.
    "compact": "{proposals}Q:{question}\nA:",
}
PROPOSAL = {"default": "Candidate {i}:\n{text}\n\n", "compact": "D:{text}\n"}


@dataclass
class MoAConfig:
    """Who proposes, how many, and who aggregates."""

    proposers: str = "a,b"
    """models that propose: 'a,b' (both, the pair's MoA) or 'a' / 'b' (Self-MoA: one model, k samples)"""
    k: int = 4
    """proposals per problem per layer, split evenly across the proposers"""
    aggregator: str = "a"
    """model that reads the proposals and answers: 'a' or 'b'"""
    layers: int = 1
    """proposal layers; each layer after the first reads the previous layer's proposals"""
    show: SummaryMode = "with_answer"
    """what of each proposal the aggregator reads: 'with_answer' (thinking dropped), 'paper' (answer withheld too) or 'full'"""

    def validate(self) -> None:
        names = [p.strip() for p in self.proposers.split(",")]
        if not names or any(n not in ("a", "b") for n in names) or len(set(names)) != len(names):
            raise SystemExit(f"error: --proposers must be 'a,b', 'a' or 'b', got {self.proposers!r}")
        if self.k < len(names):
            raise SystemExit(f"error: --k must be at least the number of proposers ({len(names)}), got {self.k}")
        if self.aggregator not in ("a", "b"):
            raise SystemExit(f"error: --aggregator must be 'a' or 'b', got {self.aggregator!r}")
        if self.layers < 1:
            raise SystemExit(f"error: --layers must be at least 1, got {self.layers}")

    @property
    def name(self) -> str:
        return f"MoA({'+'.join(self.proposers.upper().split(','))}×{self.k}→{self.aggregator.upper()}, L{self.layers})"


@dataclass
class Args(InferenceArgs, MoAConfig):
    """Untrained Mixture-of-Agents on a pair."""

    model: str = "tiny"
    """'tiny', 'A_PATH,B_PATH', one base model (two LoRA adapters), or an agon_grpo run directory"""
    split: Literal["validation", "test"] = "test"
    """split evaluated: 'validation' or 'test'"""
    unused_eval = {"split": "use --split", "greedy": "MoA reports sampled pass@1 only"}


def aggregate_prompt(template: str, question: str, proposals: Sequence[str]) -> str:
    """The aggregate-and-synthesize prompt showing every proposal (already summarized) once."""
    if template not in AGGREGATE:
        raise ValueError(f"no MoA aggregator prompt for template {template!r}; known: {sorted(AGGREGATE)}")
    shown = "".join(PROPOSAL[template].format(i=i + 1, text=t) for i, t in enumerate(proposals))
    return AGGREGATE[template].format(k=len(proposals), proposals=shown, question=question)


def moa_prompts(game: AgonGame, problems: Sequence[Problem], proposals: Sequence[Sequence[str]], show: str) -> list[str]:
    """One aggregator prompt per problem, each proposal passed through the game's summary channel."""
    view = replace(game, summary=show)
    return [aggregate_prompt(game.template.name, p.question, [view.summarize(t) for t in props])
            for p, props in zip(problems, proposals)]


def evaluate_moa(models: dict[str, Policy], problems: Sequence[Problem], game: AgonGame, moa: MoAConfig,
                 cfg: EvalConfig, seed: int) -> dict:
    """pass@1 of the aggregator's answer over `cfg.samples` independent MoA runs per problem.

    Also reports the last layer's mean proposal accuracy and the rate at which at least one
    proposal was right (what a perfect aggregator could reach).
    """
    moa.validate()
    names = [n.strip().upper() for n in moa.proposers.split(",")]
    counts = [moa.k // len(names) + (i < moa.k % len(names)) for i in range(len(names))]
    reps = [p for p in problems for _ in range(cfg.samples)]  # one MoA run per sample
    prompts = game.drafter_prompts(reps)
    for layer in range(moa.layers):
        proposals: list[list[str]] = [[] for _ in reps]
        for j, (name, n) in enumerate(zip(names, counts)):
            gens = Rollouts.sample(models[name], reps, prompts, n, cfg.params(), seed + 1000 * layer + j)
            for i, props in enumerate(proposals):
                props.extend(gens.texts[i * n:(i + 1) * n])
        prompts = moa_prompts(game, reps, proposals, moa.show)
    finals = Rollouts.sample(models[moa.aggregator.upper()], reps, prompts, 1, cfg.params(), seed + 999)
    _, verdicts = game.grade_solo(reps, finals.texts)
    _, proposal_verdicts = game.grade_solo([p for p in reps for _ in range(moa.k)], [t for ps in proposals for t in ps])
    right = [v.correct for v in proposal_verdicts]
    any_right = [any(right[i * moa.k:(i + 1) * moa.k]) for i in range(len(reps))]
    # reps is problem-major, cfg.samples runs each: per_problem then holds one mean per problem
    return summary_row(moa.name, [v.correct for v in verdicts], [len(g.completion_ids) for g in finals.gens], None,
                       samples=cfg.samples, proposal_pass=sum(right) / max(len(right), 1),
                       any_proposal_right=sum(any_right) / max(len(reps), 1), calls_per_answer=moa.k * moa.layers + 1)


def main(args: Args) -> dict:
    t0 = time.perf_counter()
    args.validate()
    args.check()
    args.seed_everything()
    models, play, run = load_models(args)
    if set(models) != {"A", "B"}:
        raise SystemExit(f"error: --model {args.model!r} is a single-model run; MoA here needs a pair")
    cfg = replace(args.with_run_eval(run), greedy=False)
    problems = run.load(args.split, cfg.tier, cfg.problems)
    game = play(problems[0].domain)
    if game.template.name not in AGGREGATE:  # before any generation, not after the proposals
        raise SystemExit(f"error: no MoA aggregator prompt for template {game.template.name!r} (known: {sorted(AGGREGATE)}); "
                         f"pass --template with one of those, or other problems")
    row = evaluate_moa(models, problems, game, args, cfg, args.seed)

    table = markdown_table([{"method": row["method"], "pass@1": f"{100 * row['pass@1']:.1f}",
                             "95% CI": f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]",
                             "proposal pass@1": f"{100 * row['proposal_pass']:.1f}",
                             "any proposal right": f"{100 * row['any_proposal_right']:.1f}",
                             "length (tokens)": f"{row['mean_length']:.1f}", "calls per answer": row["calls_per_answer"]}])
    note = f"{args.split} split, {cfg.tier} tier, {len(problems)} problems × {cfg.samples} runs; " \
           f"{time.perf_counter() - t0:.0f} s wall."
    args.write_outputs("moa", "Mixture-of-Agents", {"row": row}, table, note)
    return row


if __name__ == "__main__":
    main(Args.cli())
