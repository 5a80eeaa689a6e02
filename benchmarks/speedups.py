"""Each speed-up of the step and of the evaluation, measured off and on, and what it changed.

    python -m benchmarks.speedups [--model tiny] [--problems-per-step 16] [--group 8] [--rounds 5]

Three changes make the learners faster without changing what they compute (issue 15, item 5):
- skip: the update skips the forward and backward of completions whose advantage is exactly 0
  (`baselines.update.grpo_update`; without a KL term they add exactly 0 to the gradient);
- rows leave: finished rows leave the decoding batch once the running ones are 3/4 of it
  (`baselines.policy.sampling.sample`, `compact=0.75`);
- drafts once: a pair's evaluation samples each model's drafts once for its own row and its
  cascade (`baselines.evaluate.evaluate_pair`).

The learners have no option to turn them off; this benchmark does it by wrapping their seams:
- skip off: the update receives advantages whose exact zeros are 1e-30, so every completion goes
  through forward and backward, as before the change (their part of the gradient is 1e-30 times
  what an advantage of 1 would give);
- rows leave off: the HF policies' sampler runs with `compact=0` (rows never leave);
- drafts once off: the paper's four rows evaluated one by one (`evaluate_single` twice,
  `evaluate_cascade` twice), each sampling its own drafts.

The Agon step is the real `agon_step`, set up as `benchmarks.step_profile` sets it up. After
`--warmup` steps the state (both policies, optimisers, schedules, the RNG) is saved; in every round
each configuration runs the same next step from that state, their order rotating between rounds,
and the median over rounds is reported. Each configuration's work is checked against "all on" of
the same round: the sampled tokens, the weights after the step (max |Δ|), how many completions
went through the update, and how many times a decoding batch shrank. The evaluation runs from the
same saved state on `--eval-problems` held-out problems and compares its rows with "all on".
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import statistics
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from unittest import mock

import torch
from transformers import DynamicCache

import baselines.agon_grpo as agon_grpo
import baselines.policy.hf as hf
import baselines.update as update
from baselines.evaluate import evaluate_cascade, evaluate_pair, evaluate_single
from baselines.policy import fast_decode, sampling
from benchmarks.report import RESULTS, command_line, require_at_least, write_report
from benchmarks.step_profile import Args as ProfileArgs
from benchmarks.step_profile import Learner, agon_learner

STEP_CONFIGS = {"all on": (), "skip off": ("skip",), "rows leave off": ("rows",), "all off": ("skip", "rows")}
EVAL_CONFIGS = {"all on": (), "drafts once off": ("drafts",), "rows leave off": ("rows",),
                "all off": ("drafts", "rows")}


@dataclass
class Args:
    """Speed-up benchmark options."""

    model: str = "tiny"
    """the pair Agon trains ('tiny': the shipped pair; 'smollm2': the LoRA pair on SmolLM2-135M)"""
    problems_per_step: int = 16
    """problems per Agon step"""
    group: int = 8
    """N: drafts per problem (plus one answer each)"""
    max_new_tokens: int = 128
    """completion length limit in tokens, per rollout (the learners' default)"""
    warmup: int = 2
    """steps trained (everything on) before the state every round starts from is saved"""
    rounds: int = 5
    """rounds of the step, each running every configuration once from the saved state"""
    eval_problems: int = 128
    """held-out problems for the evaluation's timing (4 samples + greedy each, as the learners evaluate)"""
    eval_rounds: int = 3
    """rounds of the evaluation, each running every configuration once"""
    seed: int = 0
    """seed for loading, data order and sampling"""
    threads: int = 2
    """torch CPU threads"""
    results_dir: str = str(RESULTS)
    """where `<name>.json` and `<name>.md` go"""
    name: str = "speedups"
    """base name of the output files"""

    def check(self) -> None:
        """Fail before any work, naming the option."""
        require_at_least(self, {**dict.fromkeys(("problems_per_step", "max_new_tokens", "rounds", "eval_problems",
                                                 "eval_rounds", "threads"), 1), "group": 2, "warmup": 0})

    def command(self) -> str:
        """The command line that reproduces this run (options left at their default omitted)."""
        return command_line("benchmarks.speedups", self)


# ---------------------------------------------------------------- switching a speed-up off, and watching the work
class Watch:
    """Within `switched(off)`: the named speed-ups are off, and the work done is recorded (every sampled row's
    tokens, the completions that went through the update, the times a decoding batch shrank)."""

    def __init__(self):
        self.tokens: list[list[int]] = []
        self.scored = 0
        self.shrank = 0

    @contextlib.contextmanager
    def switched(self, off: tuple[str, ...]):
        compact = 0.0 if "rows" in off else 0.75
        real_sample, real_loss, real_update = sampling.sample, update._loss, update.grpo_update

        def sample(*a, **kw):
            out = real_sample(*a, compact=compact, **kw)
            self.tokens += [c for c, _, _ in out]
            return out

        def loss(policy, gens, adv, args):
            self.scored += len(gens)
            return real_loss(policy, gens, adv, args)

        def grpo_update(policy, opt, sched, gens, adv, args):
            if "skip" in off:
                adv = torch.where(adv == 0, torch.full_like(adv, 1e-30), adv)
            return real_update(policy, opt, sched, gens, adv, args)

        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.object(hf, "sample", sample))
            stack.enter_context(mock.patch.object(update, "_loss", loss))
            stack.enter_context(mock.patch.object(agon_grpo, "grpo_update", grpo_update))
            for owner, name in ((fast_decode.Decoder, "select"), (DynamicCache, "batch_select_indices")):
                stack.enter_context(mock.patch.object(owner, name, self._counting(getattr(owner, name))))
            yield self

    def _counting(self, fn):
        @functools.wraps(fn)
        def counted(*a, **kw):
            self.shrank += 1
            return fn(*a, **kw)
        return counted


# ---------------------------------------------------------------- the learner's state, saved and restored
def snapshot(ln: Learner) -> dict:
    return {"params": [[p.detach().clone() for p in pol.parameters()] for pol in ln.policies],
            "opts": [copy.deepcopy(o.state_dict()) for o in ln.opts],
            "scheds": [copy.deepcopy(s.state_dict()) for s in ln.scheds], "rng": torch.get_rng_state()}


def restore(ln: Learner, state: dict) -> None:
    with torch.no_grad():
        for pol, saved in zip(ln.policies, state["params"]):
            for p, v in zip(pol.parameters(), saved):
                p.copy_(v)
    for o, s in zip(ln.opts, state["opts"]):
        o.load_state_dict(copy.deepcopy(s))
    for sc, s in zip(ln.scheds, state["scheds"]):
        sc.load_state_dict(copy.deepcopy(s))
    torch.set_rng_state(state["rng"])


def weights(ln: Learner) -> list[torch.Tensor]:
    return [p.detach().clone() for pol in ln.policies for p in pol.parameters()]


# ---------------------------------------------------------------- measuring
def _rotated(names: list[str], r: int) -> list[str]:
    """The configurations in round r's order: shifted by one each round, so drift falls on all."""
    k = r % len(names)
    return names[k:] + names[:k]


def time_steps(ln: Learner, state: dict, step: int, rounds: int) -> dict[str, list[dict]]:
    """Per configuration, one record per round: seconds, and the work compared with 'all on'."""
    out = {c: [] for c in STEP_CONFIGS}
    for r in range(rounds):
        done = {}
        for c in _rotated(list(STEP_CONFIGS), r):
            restore(ln, state)
            watch = Watch()
            with watch.switched(STEP_CONFIGS[c]):
                t = time.perf_counter()
                ln.step(step)
                secs = time.perf_counter() - t
            done[c] = (secs, watch, weights(ln))
        _, on, w_on = done["all on"]
        for c, (secs, watch, w) in done.items():
            out[c].append({"s": secs, "scored": watch.scored, "rows": len(watch.tokens), "shrank": watch.shrank,
                           "same_tokens": watch.tokens == on.tokens,
                           "max_weight_diff": max(float((a - b).abs().max()) for a, b in zip(w, w_on))})
    restore(ln, state)
    return out


def _evaluate(ln: Learner, problems, cfg, seed: int, drafts_once: bool) -> list[dict]:
    a, b = ln.policies
    if drafts_once:
        return evaluate_pair(a, b, problems, ln.game, cfg, seed, progress=False)
    return [evaluate_single(a, problems, ln.game, cfg, seed, False), evaluate_single(b, problems, ln.game, cfg, seed, False),
            evaluate_cascade(a, b, problems, ln.game, cfg, seed, False),
            evaluate_cascade(b, a, problems, ln.game, cfg, seed, False)]


def time_evaluations(ln: Learner, problems, rounds: int) -> dict[str, list[dict]]:
    cfg, seed = ln.args.eval, ln.args.eval_seed()
    out = {c: [] for c in EVAL_CONFIGS}
    for r in range(rounds):
        done = {}
        for c in _rotated(list(EVAL_CONFIGS), r):
            watch = Watch()
            with watch.switched(EVAL_CONFIGS[c]):
                t = time.perf_counter()
                rows = _evaluate(ln, problems, cfg, seed, drafts_once="drafts" not in EVAL_CONFIGS[c])
                secs = time.perf_counter() - t
            done[c] = (secs, watch, rows)
        for c, (secs, watch, rows) in done.items():
            out[c].append({"s": secs, "rows": len(watch.tokens), "shrank": watch.shrank,
                           "same_rows": rows == done["all on"][2],
                           "pass@1": {row["method"]: row["pass@1"] for row in rows}})
    return out


def table(part: str, records: dict[str, list[dict]]) -> list[dict]:
    on = statistics.median(x["s"] for x in records["all on"])
    rows = []
    for c, xs in records.items():
        med = statistics.median(x["s"] for x in xs)
        row = {"part": part, "configuration": c, "median s": med, "× all on's time": med / on,
               "rows sampled": xs[0]["rows"], "decode batch shrank": xs[0]["shrank"]}
        if "scored" in xs[0]:
            row |= {"completions through the update": xs[0]["scored"],
                    "same tokens as all on": f"{sum(x['same_tokens'] for x in xs)}/{len(xs)}",
                    "max |Δ weight| vs all on": max(x["max_weight_diff"] for x in xs)}
        else:
            row |= {"same rows as all on": f"{sum(x['same_rows'] for x in xs)}/{len(xs)}"}
        rows.append(row)
    return rows


def main(args: Args) -> dict:
    args.check()
    t0 = time.perf_counter()
    torch.set_num_threads(args.threads)
    prof = ProfileArgs(model=args.model, problems_per_step=args.problems_per_step, group=args.group,
                       max_new_tokens=args.max_new_tokens, steps=args.rounds, warmup=args.warmup, seed=args.seed,
                       threads=args.threads)
    ln = agon_learner(prof)
    for s in range(args.warmup):
        ln.step(s)
    state = snapshot(ln)
    steps = time_steps(ln, state, args.warmup, args.rounds)
    test = ln.args.load(ln.args.eval.split, ln.args.eval.tier, args.eval_problems)
    evals = time_evaluations(ln, test, args.eval_rounds)
    rows = table("Agon step", steps) + table("evaluation", evals)
    wall = time.perf_counter() - t0

    def gain(records, c):
        return statistics.median(x["s"] for x in records[c]) / statistics.median(x["s"] for x in records["all on"])

    versions = {lib: version(lib) for lib in ("torch", "transformers")}
    scored = steps["all on"][0]["scored"], steps["skip off"][0]["scored"]
    notes = [
        f"each speed-up's gain is its 'off' row's time over 'all on': skip {gain(steps, 'skip off'):.2f}x, rows leave "
        f"{gain(steps, 'rows leave off'):.2f}x, both {gain(steps, 'all off'):.2f}x on the Agon step; drafts once "
        f"{gain(evals, 'drafts once off'):.2f}x, rows leave {gain(evals, 'rows leave off'):.2f}x, both "
        f"{gain(evals, 'all off'):.2f}x on the evaluation.",
        f"skip: this step scored {scored[0]} of its {scored[1]} completions in the update (the rest had advantage 0: "
        "all-equal groups); its gain grows with the share skipped, which shrinks as more of a run's groups split.",
        "switched off by wrapping seams (see the module docstring): skip off feeds the update 1e-30 for exact-zero "
        "advantages, rows leave off samples with compact=0, drafts once off evaluates the four rows one by one.",
        "same tokens / same rows: rounds in which the configuration sampled exactly what 'all on' sampled (rows leaving "
        "the batch change log-probs in the last bits, so a token can flip only where a draw lands within rounding of a "
        "boundary); max |Δ weight|: the largest difference of any weight after the step, over rounds.",
        f"model {args.model!r}, arith train split (hard tier), {args.problems_per_step} problems × N = {args.group} drafts "
        f"+ {args.group} answers, max {args.max_new_tokens} new tokens; the step after {args.warmup} warm-up step(s), "
        f"{args.rounds} round(s), each running every configuration from the same saved state, order rotating; "
        f"median per configuration.",
        f"evaluation: {args.eval_problems} held-out hard problems, {ln.args.eval.samples} samples at T = "
        f"{ln.args.eval.temperature} + greedy, the four rows of a pair (A, B, A→B, B→A); {args.eval_rounds} round(s).",
        f"{args.threads} torch thread(s); torch {versions['torch']}, transformers {versions['transformers']}; CPU, HF "
        f"backend; {wall:.0f} s wall.",
    ]
    jpath, mpath = write_report(args.name, "Each speed-up off and on: the Agon step and a pair's evaluation", rows,
                                notes, {"config": dataclasses.asdict(args), "threads": args.threads,
                                        "versions": versions, "wall_s": wall, "steps": steps, "evaluations": evals},
                                out_dir=Path(args.results_dir), command=args.command())
    return {"rows": rows, "steps": steps, "evaluations": evals, "json": str(jpath), "md": str(mpath)}


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args, description=__doc__))
