"""Where a training step's time goes: GRPO and Agon GRPO at equal rollouts.

    python -m benchmarks.step_profile [--problems-per-step 16] [--group 8] [--steps 3]

Both learners run their real step functions (`baselines.grpo.grpo_step`,
`baselines.agon_grpo.agon_step`), set up as their `main` sets them up, on the same problems
per step: Agon samples N drafts + N answers per problem, GRPO G = 2N completions. Nothing of
either step is copied here: `PhaseTimer` wraps the callables a step goes through (the seams
below) and charges the time spent inside each to its phase, exclusive of timed calls nested
within it, so no second is counted twice. What no seam covers is "other" (advantages, the
inline metric arithmetic, Python glue).

Phases and their seams:
- generation: `Rollouts.sample` and the policies' `generate` (prompt encoding, sampling, decoding);
- grading: the game's `grade_solo` / `score_round` / `score` and its grader's `grade_batch`;
- prompts: `AgonGame.drafter_prompts` / `challenger_prompts` / `summarize`, and drawing the
  step's problems (`batch_for_step`, `dist.shard`);
- forward: the update's loss (`baselines.update._loss`: `token_logprobs` with gradient, the
  clipped objective), and `reference_logprobs`;
- backward: `torch.Tensor.backward` and `torch.autograd.backward`;
- optimizer: `clip_grad_norm_`, the optimizer's and the schedule's `step`;
- logging: the step's metrics (`group_stats`, `step_metrics`, `game_rates`, `dist.all_cat`,
  `dist.global_stats`) and `RunDir.log` (metrics.jsonl and TensorBoard), as `train` does after each step.

Targets (issue 15): (a) grading + prompts under 5% of a step; (b) an Agon step at most 1.05×
a GRPO step at equal rollouts. The first `--warmup` steps of each learner are not measured,
and measured steps alternate between the learners, so drift in a shared machine's load
falls on both.
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Callable, Iterable, Literal

import torch

import baselines.agon_grpo as agon_grpo
import baselines.distributed as dist
import baselines.grpo as grpo
import baselines.update as update
from agon_env.game import AgonGame
from baselines.config import Dtype, policy_template
from baselines.policy import SamplingParams, load_pair, load_policy
from baselines.rollouts import Rollouts
from baselines.runlog import RunDir
from baselines.training import batch_for_step
from baselines.update import make_optimizer
from benchmarks.report import RESULTS, clock, command_line, gpu_name, peak_gib, require_at_least, require_device, write_report

PHASES = ("generation", "grading", "prompts", "forward", "backward", "optimizer", "logging", "other")
TIMED = PHASES[:-1]  # "other" is the step's time that no seam covers
MISSING = object()  # an attribute the owner did not hold itself (inherited): restored by deleting it


@dataclass
class Args:
    """Step-profile options."""

    model: str = "tiny"
    """a pair: Agon trains both models, GRPO the first ('tiny' → 'tiny:a')"""
    problems: str = "arith"
    """problem source: 'arith' (bundled), a .jsonl path, or 'deepmath:PATH'"""
    train_tiers: str = "hard"
    """difficulty tiers the steps draw problems from (the learners' default)"""
    problems_per_step: int = 16
    """problems per step, the same for both learners"""
    group: int = 8
    """N: Agon's drafts per problem (plus one answer each); GRPO samples G = 2N per problem"""
    max_new_tokens: int = 128
    """completion length limit in tokens, per rollout (the learners' default)"""
    steps: int = 3
    """measured steps per learner"""
    warmup: int = 1
    """unmeasured steps per learner before the measured ones"""
    seed: int = 0
    """seed for loading, data order and sampling"""
    threads: int = 2
    """torch CPU threads"""
    device: Literal["cpu", "cuda"] = "cpu"
    """where both learners run (on CUDA every phase boundary synchronizes, so kernels count to their phase)"""
    dtype: Dtype = "float32"
    """model weights' dtype ('bfloat16': the paper's GPU setting)"""
    lora_rank: int = 16
    """LoRA rank on an HF model (the tiny pair is trained fully)"""
    beta: float = 0.0
    """KL weight (> 0 scores every completion against its reference: use it for a random-weight model, whose
    all-zero rewards would let the update skip every completion)"""
    results_dir: str = str(RESULTS)
    """where `<name>.json` and `<name>.md` go"""
    name: str = "step_profile"
    """base name of the output files"""

    def check(self) -> None:
        """Fail before any work, naming the option."""
        require_at_least(self, {"problems_per_step": 1, "max_new_tokens": 1, "steps": 1, "threads": 1, "beta": 0,
                                "group": 2, "warmup": 0})
        require_device(self.device)

    def command(self) -> str:
        """The command line that reproduces this run (options left at their default omitted)."""
        return command_line("benchmarks.step_profile", self)


# ---------------------------------------------------------------- the timers
class PhaseTimer:
    """Within `with`, each seam `(owner, name, phase)` (owner a class, module or instance) is wrapped
    so that time inside it counts to `phase`, less the time inside timed calls nested in it (which
    count to their own phase). On exit every attribute is the original object again (an inherited
    one is deleted, so lookup finds the inherited one). `take()` returns the seconds per phase
    since the last `take()` and starts afresh."""

    def __init__(self, seams: Iterable[tuple[object, str, str]], clock: Callable[[], float] = time.perf_counter):
        self.seams, self.clock = [], clock
        seen = set()
        for owner, name, phase in seams:
            if phase not in TIMED:
                raise ValueError(f"phase must be one of {TIMED}, got {phase!r}")
            if (id(owner), name) not in seen:  # one owner's attribute is wrapped once
                seen.add((id(owner), name))
                self.seams.append((owner, name, phase))
        self.patched: list[tuple[object, str, object]] = []
        self.totals = dict.fromkeys(TIMED, 0.0)
        self._stack: list[list] = []  # [phase, start of its running stretch]

    def phase(self, phase: str):
        """A context in which time counts to `phase` (for work no seam covers, such as run logging)."""
        return _Phase(self, phase)

    def _enter(self, phase: str) -> None:
        now = self.clock()
        if self._stack:
            top = self._stack[-1]
            self.totals[top[0]] += now - top[1]
        self._stack.append([phase, now])

    def _exit(self) -> None:
        now = self.clock()
        phase, start = self._stack.pop()
        self.totals[phase] += now - start
        if self._stack:
            self._stack[-1][1] = now

    def _wrap(self, fn: Callable, phase: str) -> Callable:
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            self._enter(phase)
            try:
                return fn(*args, **kwargs)
            finally:
                self._exit()
        return timed

    def __enter__(self) -> "PhaseTimer":
        try:
            for owner, name, phase in self.seams:
                raw = vars(owner).get(name, MISSING)
                if isinstance(raw, (classmethod, staticmethod)):
                    new = type(raw)(self._wrap(raw.__func__, phase))
                else:
                    new = self._wrap(getattr(owner, name) if raw is MISSING else raw, phase)
                self.patched.append((owner, name, raw))
                setattr(owner, name, new)
        except BaseException:
            self._restore()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._restore()

    def _restore(self) -> None:
        while self.patched:
            owner, name, raw = self.patched.pop()
            if raw is MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, raw)

    def take(self) -> dict[str, float]:
        out, self.totals = self.totals, dict.fromkeys(TIMED, 0.0)
        return out


class _Phase:
    def __init__(self, timer: PhaseTimer, phase: str):
        self.timer, self.phase = timer, phase

    def __enter__(self):
        self.timer._enter(self.phase)

    def __exit__(self, *exc):
        self.timer._exit()


def _defining(cls: type, name: str) -> type:
    """The class of `cls`'s MRO that defines `name` (where wrapping it takes effect for every subclass)."""
    return next(c for c in cls.__mro__ if name in vars(c))


# ---------------------------------------------------------------- the learners, as their main sets them up
@dataclass
class Learner:
    name: str
    args: object
    step: Callable[[int], dict]
    policies: list
    opts: list
    scheds: list
    game: AgonGame
    rollouts: Callable[[dict], int]
    """rollouts sampled in a step, from its metrics"""
    tokens: Callable[[dict], float]
    """completion tokens sampled in a step, from its metrics"""


def _common(args: Args) -> dict:
    return dict(model=args.model, problems=args.problems, train_tiers=args.train_tiers, seed=args.seed,
                threads=args.threads, device=args.device, dtype=args.dtype, lora_rank=args.lora_rank, beta=args.beta,
                backend="hf", steps=args.warmup + args.steps,
                problems_per_step=args.problems_per_step, sampling=SamplingParams(max_new_tokens=args.max_new_tokens),
                eval_every=0, checkpoint_every=0, progress=False)


def grpo_learner(args: Args) -> Learner:
    g = grpo.Args(rollouts_per_problem=2 * args.group, **_common(args))
    g.validate("rollouts-per-problem", g.rollouts_per_problem)
    dist.init(g.device)
    g.seed_everything()
    train_set = g.load("train", g.train_tiers)
    policy = load_policy(g.model_spec().member(g.policy), device=g.device, seed=g.seed, reference=g.beta > 0,
                         backend=g.backend, lora_rank=g.lora_rank, dtype=g.dtype)
    policy.name = "GRPO"
    game = g.game(train_set[0].domain, policy_template([policy]), format_weight=g.format_weight)
    opt, sched = make_optimizer(policy, g)
    return Learner("GRPO", g, lambda s: grpo.grpo_step(s, g, game, train_set, policy, opt, sched), [policy], [opt],
                   [sched], game, lambda m: m["rollouts"], lambda m: m["rollouts"] * m["length"])


def agon_learner(args: Args) -> Learner:
    a = agon_grpo.Args(group_size=args.group, **_common(args))
    a.validate("group-size", a.group_size)
    dist.init(a.device)
    a.seed_everything()
    train_set = a.load("train", a.train_tiers)
    pa, pb = load_pair(a.model_spec(), lora_rank=a.lora_rank, device=a.device, seed=a.seed, backend=a.backend,
                       reference=a.beta > 0, dtype=a.dtype)
    game = a.game(train_set[0].domain, policy_template([pa, pb]), a.reward, a.format_weight,
                  length_tiebreak=a.length_tiebreak, summary=a.summary)
    policies, opts, scheds = {"A": pa, "B": pb}, {}, {}
    for k, pol in policies.items():
        opts[k], scheds[k] = make_optimizer(pol, a)
    games = a.problems_per_step * a.group_size
    return Learner("Agon GRPO", a, lambda s: agon_grpo.agon_step(s, a, game, train_set, policies, opts, scheds),
                   [pa, pb], list(opts.values()), list(scheds.values()), game, lambda m: 2 * games,
                   lambda m: games * (m["length/drafter"] + m["length/challenger"]))


def seams(learners: list[Learner]) -> list[tuple[object, str, str]]:
    """Every callable a step of these learners is timed through, with its phase."""
    out = [(Rollouts, "sample", "generation"), (AgonGame, "grade_solo", "grading"),
           (AgonGame, "score_round", "grading"), (AgonGame, "score", "grading"),
           (AgonGame, "drafter_prompts", "prompts"), (AgonGame, "challenger_prompts", "prompts"),
           (AgonGame, "summarize", "prompts"), (grpo, "batch_for_step", "prompts"),
           (agon_grpo, "batch_for_step", "prompts"), (dist, "shard", "prompts"),
           (update, "_loss", "forward"), (torch.Tensor, "backward", "backward"),
           (torch.autograd, "backward", "backward"), (torch.nn.utils, "clip_grad_norm_", "optimizer"),
           (grpo, "group_stats", "logging"), (agon_grpo, "group_stats", "logging"),
           (agon_grpo, "step_metrics", "logging"), (agon_grpo, "game_rates", "logging"),
           (dist, "all_cat", "logging"), (dist, "global_stats", "logging")]
    for ln in learners:
        for p in ln.policies:
            out += [(_defining(type(p), "generate"), "generate", "generation"),
                    (_defining(type(p), "token_logprobs"), "token_logprobs", "forward"),
                    (_defining(type(p), "reference_logprobs"), "reference_logprobs", "forward")]
        out += [(_defining(type(ln.game.grader), "grade_batch"), "grade_batch", "grading")]
        out += [(o, "step", "optimizer") for o in (*ln.opts, *ln.scheds)]  # instances: a scheduler wraps opt.step there
    return out


# ---------------------------------------------------------------- measuring
def where(args: Args) -> str:
    """'CPU', or e.g. 'CUDA, bfloat16, β = 0.04' (the settings that change what a step computes on)."""
    extra = [args.dtype] * (args.dtype != "float32") + [f"β = {args.beta:g}"] * (args.beta > 0)
    return ", ".join([args.device.upper(), *extra])


def profile(learners: list[Learner], args: Args, run_root: Path) -> tuple[dict, list]:
    """Per learner: each measured step's seconds per phase, rollouts and tokens (and peak GPU memory on
    CUDA); and what was patched."""
    runs = {ln.name: RunDir(run_root / ln.name.replace(" ", "_"), ln.args, overwrite=True) for ln in learners}
    steps = {ln.name: [] for ln in learners}
    now = clock(args.device)
    timer = PhaseTimer(seams(learners), clock=now)
    try:
        with timer:
            patched = list(timer.patched)
            for s in range(args.warmup + args.steps):
                for ln in learners:  # alternating, so a change in the machine's load falls on both
                    peak_gib(args.device, reset=True)
                    timer.take()
                    t0 = now()
                    m = ln.step(s)
                    with timer.phase("logging"):
                        runs[ln.name].log(s, m)
                    total = now() - t0
                    phases = timer.take()
                    phases["other"] = total - sum(phases.values())  # >= 0: every phase lies inside the step
                    if s >= args.warmup:
                        steps[ln.name].append({"step": s, "total_s": total, "phases_s": phases,
                                               "rollouts": ln.rollouts(m), "tokens": ln.tokens(m),
                                               "peak_gib": peak_gib(args.device)})
    finally:
        for r in runs.values():
            r.close()
    return steps, patched


def matmul_params(model) -> int:
    """The base's parameters a token's forward multiplies by: all but the input embedding (a lookup) and
    LoRA's, with the LM head counted also when it is tied to the embedding (its matmul still runs, and a
    151,936-word vocabulary is a quarter of Qwen3-0.6B's parameters)."""
    embed, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    return head.numel() + sum(p.numel() for n, p in model.named_parameters()
                              if p is not embed and p is not head and "lora_" not in n)


def update_rate(learner: Learner, args: Args, reps: int = 3) -> dict:
    """How close the update runs to this machine's arithmetic limit: the GRPO policy's log-prob forward
    plus backward on one step's completions, in GFLOP/s at 6 · `matmul_params` · (padded tokens), beside
    one large matmul's GFLOP/s on the same device: 2048² float32 on CPU (at the same threads), 8192² in
    the weights' dtype on CUDA. A LoRA policy counts its base's parameters: the update's forward and
    backward go through all of them."""
    policy, g = learner.policies[0], learner.args
    problems = batch_for_step(g.load("train", g.train_tiers), 0, g.problems_per_step, g.seed)
    gens = [x for row in policy.generate(learner.game.drafter_prompts(problems), g.rollouts_per_problem, g.sampling,
                                         seed=g.seed) for x in row]
    pids, cids = [x.prompt_ids for x in gens], [x.completion_ids for x in gens]
    tokens = len(gens) * (max(map(len, pids)) + max(map(len, cids)))
    embed = policy.model.get_input_embeddings().weight
    params = matmul_params(policy.model)
    now = clock(args.device)
    times = []
    for _ in range(1 + reps):
        t = now()
        policy.token_logprobs(pids, cids)[0].sum().backward()
        times.append(now() - t)
        policy.model.zero_grad(set_to_none=True)
    n = 8192 if args.device == "cuda" else 2048
    x = torch.randn(n, n, device=args.device, dtype=embed.dtype if args.device == "cuda" else torch.float32)
    mm = []
    for _ in range(1 + reps):
        t = now()
        x @ x
        mm.append(now() - t)
    update_s, mm_s = min(times[1:]), min(mm[1:])
    return {"update_s": update_s, "padded_tokens": tokens, "params": params, "matmul_n": n,
            "update_gflops": 6 * params * tokens / update_s / 1e9, "matmul_gflops": 2 * n**3 / mm_s / 1e9}


def summarise(steps: list[dict]) -> dict:
    """Mean seconds per step, per phase, and each phase's share of the total in %."""
    n, total = len(steps), sum(s["total_s"] for s in steps)
    secs = {p: sum(s["phases_s"][p] for s in steps) / n for p in PHASES}
    return {"s_per_step": total / n, "phase_s": secs, "share_pct": {p: 100 * secs[p] * n / total for p in PHASES},
            "rollouts_per_step": sum(s["rollouts"] for s in steps) / n,
            "tokens_per_step": sum(s["tokens"] for s in steps) / n, "steps": steps}


def main(args: Args) -> dict:
    args.check()
    t0 = time.perf_counter()
    learners = [grpo_learner(args), agon_learner(args)]
    with tempfile.TemporaryDirectory(prefix="step_profile-") as tmp:
        steps, patched = profile(learners, args, Path(tmp))
    prof = {name: summarise(ss) for name, ss in steps.items()}
    rate = update_rate(learners[0], args)
    g, a = prof["GRPO"], prof["Agon GRPO"]

    rows = [{"phase": p, **{f"{name} {col}": v for name, s in prof.items()
                            for col, v in (("s/step", s["phase_s"][p]), ("%", s["share_pct"][p]))}} for p in PHASES]
    rows.append({"phase": "step", **{f"{name} {col}": v for name, s in prof.items()
                                     for col, v in (("s/step", s["s_per_step"]), ("%", 100.0))}})
    env_share = {name: s["share_pct"]["grading"] + s["share_pct"]["prompts"] for name, s in prof.items()}
    ratio = a["s_per_step"] / g["s_per_step"]
    targets = {"a_env_share_pct": env_share, "a_met": all(v < 5 for v in env_share.values()),
               "b_agon_over_grpo": ratio, "b_met": ratio <= 1.05}
    wall = time.perf_counter() - t0
    versions = {lib: version(lib) for lib in ("torch", "transformers")}
    met = lambda ok: "met" if ok else "not met"  # noqa: E731
    notes = [
        "target (a): grading + prompts < 5% of a step -> " + ", ".join(f"{k} {v:.2f}%" for k, v in env_share.items())
        + f" ({met(targets['a_met'])})",
        f"target (b): Agon step <= 1.05x GRPO step at equal rollouts -> {ratio:.3f}x ({met(targets['b_met'])})",
        f"{args.problems_per_step} problems per step; Agon N = {args.group} drafts + {args.group} answers per problem, "
        f"GRPO G = {2 * args.group}: {g['rollouts_per_step']:.0f} vs {a['rollouts_per_step']:.0f} rollouts per step, "
        f"{g['tokens_per_step']:.0f} vs {a['tokens_per_step']:.0f} completion tokens sampled per step "
        "(Agon's challenger prompts are longer: they carry the draft's summary).",
        f"model {args.model!r} on {args.problems!r} (train split, tiers {args.train_tiers!r}), {where(args)}, HF backend, "
        f"max {args.max_new_tokens} new tokens; mean of {args.steps} measured steps per learner after {args.warmup} "
        "warm-up step(s), the learners' steps alternating.",
        f"The update's forward + backward alone (GRPO's {rate['padded_tokens']} padded tokens, best of 3) runs at "
        f"{rate['update_gflops']:.0f} GFLOP/s (6 × {rate['params']:,} matmul parameters, LM head included, × tokens), against "
        f"{rate['matmul_gflops']:.0f} GFLOP/s for one {rate['matmul_n']}² {'float32' if args.device == 'cpu' else args.dtype} "
        "matmul here: "
        f"{100 * rate['update_gflops'] / rate['matmul_gflops']:.0f}% of what the cores do on large matmuls.",
        "Each phase is the time inside its seams exclusive of nested timed calls (see the module docstring); "
        "'other' is the rest of the step (advantages, inline metrics, glue). logging includes RunDir.log.",
        f"{args.threads} torch thread(s); torch {versions['torch']}, transformers {versions['transformers']}; "
        f"{wall:.0f} s wall.",
        *([f"{gpu_name()}: every phase boundary synchronizes (its kernels "
           "count to it); peak GPU memory per step (the process's, both learners' weights resident): "
           + ", ".join(f"{name} {max(x['peak_gib'] for x in s['steps']):.2f} GiB" for name, s in prof.items())]
          if args.device == "cuda" else []),
    ]
    jpath, mpath = write_report(args.name, "Where a training step's time goes: GRPO vs Agon GRPO", rows, notes,
                                {"config": dataclasses.asdict(args), "threads": args.threads, "versions": versions,
                                 "wall_s": wall, "profiles": prof, "targets": targets, "update_rate": rate},
                                out_dir=Path(args.results_dir), command=args.command())
    return {"rows": rows, "profiles": prof, "targets": targets, "json": str(jpath), "md": str(mpath),
            "patched": patched}


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args, description=__doc__))
