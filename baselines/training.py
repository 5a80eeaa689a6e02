"""What both learners share around their step: the data stream and the run skeleton.

A learner file defines its step (sample, grade, update: the method) and hands it to
`train`, which evaluates before training (or resumes from the last checkpoint), runs the
steps with mid-run evaluations and checkpoints, and `finish`, which evaluates after
training and writes the table and plots.

The held-out curve `eval/<method>` is over the first `CURVE_PROBLEMS` test problems at every
point: mid-run evaluations sample just those, and the before/after points are read off the
full evaluations' per-problem results, whose whole-set pass@1 is logged as `eval_full/<method>`.

Under torchrun every rank runs this skeleton (each step and evaluation is collective), and rank 0
alone writes the run directory; see `baselines.distributed`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from tqdm import trange

from problems.record import Problem

from . import distributed as dist
from .config import EvalConfig, LearnerArgs, from_dict
from .policy import Policy
from .report import final_table, model_rows, slice_rows
from .runlog import RunDir, load_checkpoint, load_config, save_checkpoint

Evaluate = Callable[[Sequence[Problem], EvalConfig], list[dict]]
CURVE_PROBLEMS = 100  # held-out problems behind every point of the curve (`--eval-every` evaluates these)


def endpoint_metrics(rows: list[dict]) -> dict[str, float]:
    """A full evaluation's metrics: `eval_full/*` over all its problems, the curve's `eval/*` over
    the first CURVE_PROBLEMS of them (the mid-run evaluations' problems)."""
    k = min(CURVE_PROBLEMS, len(rows[0]["per_problem"]))
    return {**model_rows(rows, "eval_full/"), **slice_rows(rows, k, "eval/")}


def batch_for_step(problems: Sequence[Problem], step: int, per_step: int, seed: int) -> list[Problem]:
    """The problems of optimizer step `step`: epochs of seeded permutations, so the data
    position is a function of the step alone and a resumed run sees the same stream."""
    n, out = len(problems), []
    for k in range(step * per_step, (step + 1) * per_step):
        epoch, i = divmod(k, n)
        order = np.random.default_rng([seed, epoch]).permutation(n)
        out.append(problems[order[i]])
    return out


def resumed(args: LearnerArgs) -> LearnerArgs:
    """`args` as given, or, with `--resume`, the run's own config. Kept from the command line: `resume`, and
    `--servers` / `--adapter-dir` when given (where generation runs can move, e.g. to a restarted server job;
    what is trained cannot)."""
    if not args.resume:
        return args
    run_args = from_dict(type(args), load_config(args.resume))
    run_args.resume = args.resume
    for name in ("servers", "adapter_dir"):
        if getattr(args, name):
            setattr(run_args, name, getattr(args, name))
    return run_args


def train(args: LearnerArgs, learner: str, name: str, models: dict[str, Policy], opts: dict, scheds: dict,
          step: Callable[[int], dict], evaluate: Evaluate, test: list[Problem],
          postfix: Callable[[dict], dict]) -> tuple[RunDir, list[dict]]:
    """Run `step` for every step not yet done, in `out_dir/name` (or the resumed run's directory);
    returns the run directory and the before-training rows."""
    main = dist.is_main()
    start, extra = load_checkpoint(Path(args.resume), models, opts, scheds) if args.resume else (0, {})
    run = RunDir(args.resume or Path(args.out_dir) / name, args, resume=bool(args.resume), write=main,
                 overwrite=args.overwrite, start=start)
    if args.resume:
        before = extra["before"]
        run.truncate_after(start)
        if main:
            print(f"resumed {run.path} at step {start}")
    else:
        before = evaluate(test, args.eval)
        run.log(0, endpoint_metrics(before))
    dist.broadcast_params(models)

    bar = trange(start, args.steps, desc=learner, disable=not (args.progress and main), dynamic_ncols=True)
    for s in bar:
        # a held-out point after every eval_every updates, in the row of the step that starts from them (the
        # rows' `step` counts the updates done, as the before (0) and after (steps) evaluations' rows do)
        curve = args.eval_every and s and s % args.eval_every == 0
        m = model_rows(evaluate(test[:CURVE_PROBLEMS], replace(args.eval, greedy=False)), "eval/") if curve else {}
        comm = dist.comm_clock()
        cuda = torch.cuda.is_initialized()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        m.update(step(s))
        if cuda:  # this process's peak during the step, resident weights included
            m["gpu_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        if dist.active():
            m["comm_time"] = dist.comm_clock() - comm  # of step_time: inside collectives, waits included
        run.log(s, m)
        bar.set_postfix(postfix(m))
        if main and args.checkpoint_every and (s + 1) % args.checkpoint_every == 0:
            save_checkpoint(run.path, s + 1, models, opts, scheds, {"before": before})
    return run, before


def finish(run: RunDir, learner: str, args: LearnerArgs, before: list[dict], after: list[dict], direction: str | None,
           plot: Callable[[list[dict]], list[Path | None]], t_start: float) -> dict:
    """Log the after-training rows, draw the plots, write the summary; returns the summary (on rank 0;
    the other ranks of a torchrun run write nothing and return {})."""
    if not run.write:
        return {}
    run.log(args.steps, endpoint_metrics(after))
    history = run.history()
    plots = plot(history)
    summary = final_table(run.path, learner, args, before, after, direction, history, time.perf_counter() - t_start)
    run.close()
    print(f"\noutputs in {run.path}: metrics.jsonl, tb/ (TensorBoard), checkpoint/, summary.md, "
          + ", ".join(p.name for p in plots if p))
    return summary
