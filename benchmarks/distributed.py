"""Data parallel on CPU: steps per second of 1 vs 2 gloo processes at equal global batch, and the
share of step time spent in collectives.

    python -m benchmarks.distributed [--steps 30] [--problems-per-step 8] [--threads 1]
    python -m benchmarks.distributed --model DIR --device cuda --dtype bfloat16 --processes 1 --beta 0.04

The second is what `benchmarks.gpu_check` runs on one GPU: the same code path on CUDA, one process
(NCCL), on any HF model (a LoRA pair on one base), reporting each case's peak GPU memory per step
(the learners log `gpu_peak_gib` on CUDA). β > 0 makes a random-weight model's update score every
completion (its all-zero rewards would let the update skip them all).

Each case is a real launch of a learner on the tiny pair (GRPO on tiny A, Agon GRPO on both):
`torchrun --standalone --nproc-per-node K` for K = 1 and 2 with the same --problems-per-step, so
the global batch is equal and only its split differs, plus a plain `python -m` run as the
reference (no torch.distributed, and one generator for the step's whole sampling batch, where a
torchrun run gives each problem its own generator within the same batched decode, see
`baselines.distributed`).

From rank 0's metrics.jsonl, over the steps after the first: steps/s is 1 / median `step_time`;
comm share is the median of `comm_time / step_time`, the time inside collectives, which
includes waiting for the slower rank, so it bounds the cost of communication from above.
Every process gets --threads threads, so K processes use K × threads cores: on a machine with
fewer free cores than that, the two-process rows measure contention, not scaling.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from baselines.config import Dtype
from benchmarks.report import RESULTS, command_line, require_at_least, write_report

MODULES = {"grpo": "baselines.grpo", "agon_grpo": "baselines.agon_grpo"}


@dataclass
class Args:
    """Benchmark options."""

    steps: int = 30
    """optimizer steps per case (the first is left out of the medians)"""
    problems_per_step: int = 8
    """global problems per step, equal in every case (split over the processes)"""
    group: int = 8
    """rollouts per problem (GRPO) and drafts per problem (Agon, which adds one answer per draft)"""
    max_new_tokens: int = 64
    """completion length limit for training rollouts"""
    threads: int = 1
    """torch threads per process"""
    learners: str = "grpo,agon_grpo"
    """comma-separated learners to measure"""
    processes: str = "plain,1,2"
    """comma-separated cases: 'plain' (python -m, no torch.distributed) and torchrun process counts"""
    model: str = "tiny"
    """the learners' --model (GRPO trains its first model)"""
    lora_rank: int = 16
    """the learners' --lora-rank (an HF model's adapters; the tiny pair is trained fully)"""
    device: Literal["cpu", "cuda"] = "cpu"
    """the learners' --device: 'cpu' (gloo) or 'cuda' (NCCL, one GPU per process)"""
    dtype: Dtype = "float32"
    """the learners' --dtype"""
    beta: float = 0.0
    """the learners' --beta (> 0 for a random-weight model, so the update scores every completion)"""
    out: str = str(RESULTS)
    """directory for <name>.json and <name>.md"""
    name: str = "distributed"
    """base name of the output files"""

    def cases(self) -> list[int | None]:
        """The process counts to launch (None: the plain run), or SystemExit naming the bad option or entry."""
        # the first step is left out of the medians: one more must remain
        require_at_least(self, {"steps": 2, "problems_per_step": 1, "group": 2, "max_new_tokens": 1, "threads": 1})
        out = []
        for c in self.processes.split(","):
            if c != "plain" and not (c.isdigit() and int(c) >= 1):
                raise SystemExit(f"error: --processes: {c!r} is neither 'plain' nor a process count (>= 1)")
            out.append(None if c == "plain" else int(c))
            if out[-1] and self.problems_per_step % out[-1]:
                raise SystemExit(f"error: --problems-per-step {self.problems_per_step} must split over {c} processes")
        return out


def _command(module: str, processes: int | None, args: Args, out: Path) -> list[str]:
    group = "--group-size" if module.endswith("agon_grpo") else "--rollouts-per-problem"
    launch = ([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"]
              if processes else [sys.executable])
    return [*launch, "-m", module, "--out-dir", str(out), "--run-name", "run", "--no-progress",
            "--threads", str(args.threads), "--steps", str(args.steps), "--problems-per-step", str(args.problems_per_step),
            group, str(args.group), "--sampling.max-new-tokens", str(args.max_new_tokens), "--eval-every", "0",
            "--checkpoint-every", "0", "--eval.problems", "4", "--eval.samples", "1", "--eval.no-greedy",
            "--eval.max-new-tokens", "16",  # evaluation is not measured: kept short
            "--model", args.model, "--device", args.device, "--dtype", args.dtype, "--beta", str(args.beta),
            "--lora-rank", str(args.lora_rank), "--backend", "hf"]


def measure(learner: str, processes: int | None, args: Args) -> dict:
    """One case's row: `processes` None is the plain `python -m` reference."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = _command(MODULES[learner], processes, args, Path(tmp))
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(args.threads)}
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode:
            raise SystemExit(f"error: {' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
        rows = [json.loads(x) for x in (Path(tmp) / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [x for x in rows if "step_time" in x][1:]
    step = statistics.median(x["step_time"] for x in steps)
    row = {"learner": learner, "launch": f"torchrun × {processes}" if processes else "python -m (plain)",
           "processes": processes or 1, "problems/step/process": args.problems_per_step // (processes or 1),
           "step time (s)": step, "steps/s": 1 / step}
    if processes:  # a plain run has no collectives
        row["comm share"] = statistics.median(x["comm_time"] / x["step_time"] for x in steps)
    if args.device == "cuda":
        row["peak GPU GiB"] = max(x["gpu_peak_gib"] for x in steps)
    return row


def main(args: Args) -> None:
    cases = args.cases()
    learners = args.learners.split(",")
    for learner in learners:
        if learner not in MODULES:
            raise SystemExit(f"error: --learners: unknown learner {learner!r}, expected some of {', '.join(MODULES)}")
    rows = []
    for learner in learners:
        case = [measure(learner, k, args) for k in cases]
        if cases[0] is None:
            for row in case:
                row["speed-up vs plain"] = row["steps/s"] / case[0]["steps/s"]
        rows += case
    backend = "NCCL" if args.device == "cuda" else "gloo"
    counts = " vs ".join(str(k) for k in cases if k)
    model = "tiny pair" if args.model == "tiny" else f"{args.model} (a LoRA pair on one base), {args.dtype}, β = {args.beta:g}"
    write_report(args.name, f"Data parallel on {args.device.upper()} ({backend}): {counts} process(es) at equal global batch",
                 rows, notes=[
        f"{model}; {args.problems_per_step} problems per step in all, {args.group} rollouts (drafts) per problem, "
        f"{args.max_new_tokens} new tokens at most, {args.threads} thread(s) per process, {args.steps} steps "
        f"(medians over all but the first)",
        "comm share: median fraction of rank 0's step time inside collectives, waits for the slower rank included",
        *(["under torchrun each problem draws from its own generator (so results match across world sizes) in one "
           "batched decode per rank, as the plain row's step does with one generator: the plain and torchrun × 1 rows "
           "do the same work, and the gap between them is torch.distributed's own overhead"]
          if {None, 1} <= set(cases) else []),
        *(["peak GPU GiB: rank 0's peak per step (`gpu_peak_gib` in metrics.jsonl), max over the steps"]
          if args.device == "cuda" else []),
    ], extra={"args": vars(args)}, out_dir=Path(args.out), command=command_line("benchmarks.distributed", args))


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args, description=__doc__))
