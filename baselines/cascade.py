"""Cascade inference for any trained pair: one model drafts, the other answers after reading
the draft's summary (thinking dropped, answer withheld), as the paper runs Agon at test time.

    python -m baselines.cascade --model runs/agon_grpo-agon-s0-...   # a run dir saved by agon_grpo
    python -m baselines.cascade --model tiny                          # the shipped (untrained) tiny pair
    python -m baselines.cascade --model PATH_A,PATH_B --template compact
    python -m baselines.cascade --model runs/grpo-a,runs/grpo-b       # two grpo runs: a GRPO-trained pair

Both directions (A→B, B→A) run on the validation split and the better one is chosen
there; only then is the test split evaluated: each model alone (the paper's checklist) and
both cascades, with the chosen direction marked. The paper chose on its held-out set,
which flatters the reported number; choosing on validation does not.

Run directories are loaded from their final checkpoint (`checkpoint/state.pt`, which the
learners write every `--checkpoint-every` steps): the run's config rebuilds the models,
the checkpoint restores the trained weights, and the run's `--eval.*` settings (temperature,
top-p, samples, ...) are used for every one not set on this command line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from agon_env.game import AgonGame
from problems.record import Problem

from .config import EvalConfig, InferenceArgs
from .evaluate import choose_direction, evaluate_cascade, evaluate_pair
from .policy import Policy
from .report import markdown_table
from .runs import load_models


@dataclass
class Args(InferenceArgs):
    """Cascade evaluation of a pair, direction chosen on validation, reported on test."""

    model: str = "tiny"
    """an agon_grpo run directory, two grpo run directories 'RUN_A,RUN_B', 'tiny', 'A_PATH,B_PATH', or one base
    model (two fresh LoRA adapters)"""
    unused_eval = {"split": "the direction is chosen on the validation split and reported on the test split"}


# ---------------------------------------------------------------- the protocol
def choose_on_validation(a: Policy, b: Policy, validation: list[Problem], game: AgonGame, cfg: EvalConfig,
                         seed: int) -> tuple[str, list[dict]]:
    """The better cascade direction on `validation` (sampled pass@1), and the two cascade rows."""
    val_rows = [evaluate_cascade(a, b, validation, game, replace(cfg, greedy=False), seed),
                evaluate_cascade(b, a, validation, game, replace(cfg, greedy=False), seed)]
    return choose_direction(val_rows), val_rows


def cascade_report(a: Policy, b: Policy, validation: list[Problem], test: list[Problem], game: AgonGame,
                   cfg: EvalConfig, seed: int) -> dict:
    """Choose the direction on `validation` (both cascades), then evaluate everything on `test`.

    Returns {'direction', 'validation': the two cascade rows, 'test': A, B, A→B, B→A rows,
    'chosen': the test row of the chosen direction}. The test rows play no part in the choice.
    """
    direction, val_rows = choose_on_validation(a, b, validation, game, cfg, seed)
    test_rows = evaluate_pair(a, b, test, game, cfg, seed)
    chosen = next(r for r in test_rows if r["method"] == direction)
    return {"direction": direction, "validation": val_rows, "test": test_rows, "chosen": chosen}


def _pct(r: dict) -> str:
    return f"{100 * r['pass@1']:.1f} [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"


def report_table(report: dict) -> str:
    rows = []
    for r in report["test"]:
        val = next((v for v in report["validation"] if v["method"] == r["method"]), None)
        rows.append({
            "model": r["method"] + (" (chosen on validation)" if r["method"] == report["direction"] else ""),
            "validation pass@1": _pct(val) if val else "",
            "test pass@1 [95% CI]": _pct(r),
            "greedy": f"{100 * r['greedy']:.1f}" if "greedy" in r else "",
            "length (tokens)": f"{r['mean_length']:.1f}",
            "conversion / keep": f"{r['conversion']:.2f} / {r['keep']:.2f}" if "conversion" in r else "",
        })
    return markdown_table(rows)


def main(args: Args) -> dict:
    t0 = time.perf_counter()
    args.check()
    args.seed_everything()
    policies, play, run = load_models(args)
    if set(policies) != {"A", "B"}:
        raise SystemExit(f"error: --model {args.model!r} is a single-model run; a cascade needs a pair "
                         f"(see `python -m baselines.single_model` for a model reading its own draft)")
    # greedy is reported whatever the run did, unless this command line says --eval.no-greedy
    cfg = args.with_run_eval(replace(run, eval=replace(run.eval, greedy=True)))
    validation = run.load("validation", cfg.tier, cfg.problems)
    test = run.load("test", cfg.tier, cfg.problems)
    game = play(test[0].domain)  # 'auto' picks the code template for code problems, as the learners do
    report = cascade_report(policies["A"], policies["B"], validation, test, game, cfg, args.seed)

    table = report_table(report)
    note = (f"{cfg.tier} tier, {len(test)} test problems × {cfg.samples} samples at T = {cfg.temperature}, "
            f"top-p {cfg.top_p}; direction chosen on {len(validation)} validation problems; 95% Clopper-Pearson; "
            f"{time.perf_counter() - t0:.0f} s wall.")
    args.write_outputs("cascade", "Cascade", report, table, note)
    return report


if __name__ == "__main__":
    main(Args.cli())
