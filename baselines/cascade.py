"""Cascade inference for any trained pair: one model drafts, the other answers after reading
the draft's summary (thinking dropped, answer withheld), as the paper runs Agon at test time.

    python -m baselines.cascade --model runs/agon_grpo-agon-s0-...   # a run dir saved by agon_grpo
    python -m baselines.cascade --model tiny                          # the shipped (untrained) tiny pair
    python -m baselines.cascade --model PATH_A,PATH_B --template compact

Both directions (A→B, B→A) run on the validation split and the better one is chosen
there; only then is the test split evaluated: each model alone (the paper's checklist) and
both cascades, with the chosen direction marked. The paper chose on its held-out set,
which flatters the reported number; choosing on validation does not.

Run directories are loaded from their final checkpoint (`checkpoint/state.pt`, which the
learners write every `--checkpoint-every` steps): the run's config rebuilds the models,
the checkpoint restores the trained weights.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch
import tyro

from agon_env.game import AgonGame
from benchmarks.report import markdown_table
from problems.record import Problem

from .common import CommonArgs, load_split, seed_everything
from .evaluate import EvalConfig, InferenceArgs, choose_direction, evaluate_cascade, evaluate_pair
from .policy import Policy, load_pair, load_policy


@dataclass
class Args(InferenceArgs):
    """Cascade evaluation of a pair, direction chosen on validation, reported on test."""

    model: str = "tiny"
    """an agon_grpo run directory, 'tiny', 'A_PATH,B_PATH', or one base model (two fresh LoRA adapters)"""


# ---------------------------------------------------------------- loading trained models
def is_run_dir(path: str | Path) -> bool:
    """A learner's run directory (it has config.json and metrics.jsonl), as opposed to a model dir."""
    p = Path(path)
    return (p / "config.json").exists() and (p / "metrics.jsonl").exists()


def run_args(run_dir: str | Path) -> CommonArgs:
    """The shared options a run was trained with (its game, data and evaluation settings)."""
    cfg = json.loads((Path(run_dir) / "config.json").read_text())
    return CommonArgs(**{f.name: cfg[f.name] for f in fields(CommonArgs) if f.name in cfg})


def load_run(run_dir: str | Path, device: str = "auto", backend: str = "auto") -> dict[str, Policy]:
    """The trained policies of a run: {'A', 'B'} for agon_grpo, {'GRPO'} for grpo.

    The run's config rebuilds the models exactly as the learner did; the final checkpoint
    then overwrites their trainable weights.
    """
    run_dir = Path(run_dir)
    cfg = json.loads((run_dir / "config.json").read_text())
    state_path = run_dir / "checkpoint" / "state.pt"
    if not state_path.exists():
        raise SystemExit(f"error: {run_dir} has no checkpoint/state.pt; train with --checkpoint-every set "
                         f"to a divisor of --steps so the final weights are saved")
    state = torch.load(state_path, map_location="cpu", weights_only=False)
    if state["step"] != cfg["steps"]:
        raise SystemExit(f"error: {run_dir}: the last checkpoint is at step {state['step']} of {cfg['steps']}, "
                         f"so the final weights were not saved (use --checkpoint-every dividing --steps)")
    if "group_size" in cfg:  # agon_grpo
        a, b = load_pair(cfg["model"], lora_rank=cfg["lora_rank"], device=device, backend=backend,
                         seed=cfg["seed"], reference=False)
        policies = {"A": a, "B": b}
    else:  # grpo: checkpointed under the key 'policy'
        model = f"tiny:{cfg['policy']}" if cfg["model"] == "tiny" else cfg["model"]
        pol = load_policy(model, device=device, backend=backend, seed=cfg["seed"], reference=False,
                          lora_rank=0 if model.startswith("tiny") else cfg["lora_rank"])
        pol.name = "GRPO"
        policies = {"policy": pol}
    for key, pol in policies.items():
        saved, params = state["params"][key], pol.parameters()
        if len(saved) != len(params):
            raise SystemExit(f"error: {run_dir}: checkpoint policy {key!r} has {len(saved)} tensors, model has {len(params)}")
        with torch.no_grad():
            for p, s in zip(params, saved):
                p.copy_(s)
    return policies if "policy" not in policies else {"GRPO": policies["policy"]}


def load_models(spec: str, template: str = "auto", device: str = "auto", backend: str = "auto",
                seed: int = 0) -> tuple[dict[str, Policy], AgonGame, CommonArgs]:
    """(policies, game, shared args) for a run directory or a model spec understood by `load_pair`.

    A run's game keeps its template and summary channel, so a cascade reads drafts exactly
    as the challenger did in training.
    """
    if is_run_dir(spec):
        common = run_args(spec)
        summary = json.loads((Path(spec) / "config.json").read_text()).get("summary", "paper")
        if template != "auto":
            common = replace(common, template=template)
        return load_run(spec, device, backend), common.game(summary=summary), common
    common = CommonArgs(model=spec, template=template)
    common.validate("group-size", 2)  # checks the model spec and template before loading
    a, b = load_pair(spec, lora_rank=common.lora_rank, device=device, backend=backend, seed=seed, reference=False)
    return {"A": a, "B": b}, common.game(), common


# ---------------------------------------------------------------- the protocol
def cascade_report(a: Policy, b: Policy, validation: list[Problem], test: list[Problem], game: AgonGame,
                   cfg: EvalConfig) -> dict:
    """Choose the direction on `validation` (both cascades), then evaluate everything on `test`.

    Returns {'direction', 'validation': the two cascade rows, 'test': A, B, A→B, B→A rows,
    'chosen': the test row of the chosen direction}. The test rows play no part in the choice.
    """
    val_rows = [evaluate_cascade(a, b, validation, game, replace(cfg, greedy=False)),
                evaluate_cascade(b, a, validation, game, replace(cfg, greedy=False))]
    direction = choose_direction(val_rows)
    test_rows = evaluate_pair(a, b, test, game, cfg)
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
    seed_everything(args.seed, args.threads)
    policies, game, common = load_models(args.model, args.template, args.device, args.backend, args.seed)
    if set(policies) != {"A", "B"}:
        raise SystemExit(f"error: --model {args.model!r} is a single-model run; a cascade needs a pair "
                         f"(see `python -m baselines.single_model` for a model reading its own draft)")
    data = replace(common, problems=args.problems)
    validation = load_split(data, "validation", args.eval_tier, args.eval_problems)
    test = load_split(data, "test", args.eval_tier, args.eval_problems)
    cfg = args.eval_config(greedy=True)
    report = cascade_report(policies["A"], policies["B"], validation, test, game, cfg)

    table = report_table(report)
    note = (f"{args.eval_tier} tier, {len(test)} test problems × {args.eval_samples} samples; direction chosen on "
            f"{len(validation)} validation problems; 95% Clopper-Pearson; {time.perf_counter() - t0:.0f} s wall.")
    args.write_outputs("cascade", "Cascade", report, table, note)
    return report


if __name__ == "__main__":
    main(tyro.cli(Args))
