"""A learner's run directory read back: its options, its trained policies, its game.

The inference methods (cascade, MoA, self-refinement) and the benchmarks load trained
models through here; the learners write what this reads (`config.json`, `checkpoint/`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Callable

import torch

from agon_env.game import AgonGame

from .config import InferenceArgs, LearnerArgs, from_dict, policy_template
from .policy import ModelSpec, Policy, load_pair, load_policy
from .runlog import checkpoint_state_path, restore_params


def is_run_dir(path: str | Path) -> bool:
    """A learner's run directory (it has config.json and metrics.jsonl), as opposed to a model dir."""
    p = Path(path)
    return (p / "config.json").exists() and (p / "metrics.jsonl").exists()


def run_config(run_dir: str | Path) -> dict:
    return json.loads((Path(run_dir) / "config.json").read_text())


def run_args(run_dir: str | Path) -> LearnerArgs:
    """The shared options a run was trained with (its game, data and evaluation settings)."""
    return from_dict(LearnerArgs, run_config(run_dir))


def load_run(run_dir: str | Path, device: str = "auto", backend: str = "auto") -> dict[str, Policy]:
    """The trained policies of a run: {'A', 'B'} for agon_grpo, {'GRPO'} for grpo.

    The run's config rebuilds the models exactly as the learner did; the final checkpoint
    then overwrites their trainable weights.
    """
    run_dir = Path(run_dir)
    cfg = run_config(run_dir)
    state_path = checkpoint_state_path(run_dir)
    if state_path is None:
        raise SystemExit(f"error: {run_dir} has no checkpoint/state.pt; train with --checkpoint-every set "
                         f"to a divisor of --steps so the final weights are saved")
    state = torch.load(state_path, map_location="cpu", weights_only=False)
    if state["step"] != cfg["steps"]:
        raise SystemExit(f"error: {run_dir}: the last checkpoint is at step {state['step']} of {cfg['steps']}, "
                         f"so the final weights were not saved (use --checkpoint-every dividing --steps)")
    spec = ModelSpec.parse(cfg["model"])
    if "group_size" in cfg:  # agon_grpo
        a, b = load_pair(spec, lora_rank=cfg["lora_rank"], device=device, backend=backend, seed=cfg["seed"],
                         reference=False, dtype=cfg.get("dtype", "float32"))
        policies = {"A": a, "B": b}
    else:  # grpo: checkpointed under the key 'policy'
        pol = load_policy(spec.member(cfg["policy"]), device=device, backend=backend, seed=cfg["seed"],
                          reference=False, lora_rank=cfg["lora_rank"], dtype=cfg.get("dtype", "float32"))
        pol.name = "GRPO"
        policies = {"policy": pol}
    restore_params(policies, state, run_dir)
    return policies if "policy" not in policies else {"GRPO": policies["policy"]}


def run_pair_dirs(model: str) -> tuple[str, str] | None:
    """The two run directories of a `RUN_A,RUN_B` model value, or None if it is not two runs."""
    parts = tuple(p.strip() for p in model.split(","))
    return parts if len(parts) == 2 and all(is_run_dir(p) for p in parts) else None


def load_run_pair(run_a: str | Path, run_b: str | Path, device: str = "auto", backend: str = "auto") -> dict[str, Policy]:
    """Two single-model (grpo) runs as a pair {'A': run_a's model, 'B': run_b's}, so two separately
    trained models can run as a cascade."""
    pair = {}
    for name, run_dir in (("A", run_a), ("B", run_b)):
        policies = load_run(run_dir, device, backend)
        if set(policies) != {"GRPO"}:
            raise SystemExit(f"error: {run_dir} is a pair run; a pair of runs takes two single-model (grpo) runs")
        pair[name] = policies["GRPO"]
        pair[name].name = name
    return pair


def load_models(args: InferenceArgs) -> tuple[dict[str, Policy], Callable[[str], AgonGame], LearnerArgs]:
    """(policies, the game on problems of a domain, the run's options) for `args.model`: a run
    directory, two grpo run directories `RUN_A,RUN_B` (the first one's options), or a pair spec.

    A run's game keeps its template, reward and summary channel, so a cascade reads drafts
    exactly as the challenger did in training; `args.template` overrides the template. The
    options' `problems` is the run's source unless the command line gives --problems.
    """
    pair_dirs = run_pair_dirs(args.model)
    if is_run_dir(args.model) or pair_dirs:
        first = pair_dirs[0] if pair_dirs else args.model
        run = run_args(first)
        if args.template != "auto":
            run = replace(run, template=args.template)
        run = replace(run, problems=args.problem_source(run))
        policies = (load_run_pair(*pair_dirs, args.device, args.backend) if pair_dirs
                    else load_run(args.model, args.device, args.backend))
        cfg = run_config(first)
        return policies, lambda domain: run.game(domain, policy_template(policies), reward=cfg.get("reward", "agon"),
                                                 format_weight=run.format_weight, summary=cfg.get("summary", "paper"),
                                                 length_tiebreak=cfg.get("length_tiebreak", 0.0)), run
    run = LearnerArgs(model=args.model, problems=args.problems, template=args.template, eval=args.eval, seed=args.seed)
    a, b = load_pair(args.model_spec(pair=True), lora_rank=run.lora_rank, device=args.device, backend=args.backend,
                     seed=args.seed, reference=False, dtype=args.dtype)
    return {"A": a, "B": b}, lambda domain: run.game(domain, policy_template([a, b])), run
