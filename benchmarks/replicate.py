"""The paper's comparison table (Table 3) at our scale, from one command.

    python -m benchmarks.replicate            # full run: every method, 3 seeds (about 2 h on 2 CPU cores)
    python -m benchmarks.replicate --quick    # smoke test: every method, 1 seed, a few steps (< 90 s)

Every method gets the same rollout compute, 2N rollouts per problem per optimizer step, on
the held-out hard tier, for `--seeds` seeds:

- zero-shot: model A untrained (GRPO's "before" row);
- GRPO with G = 2N;
- self-refinement and the GRPO two-pass self-cascade: the GRPO model revises its own
  answer, or reads its own draft's summary (`baselines.single_model`);
- MoA untrained: both untrained models propose, A aggregates (`baselines.moa`);
- cascade untrained: Agon's pair before training, in the direction Agon chose (so what
  training added to the cascade is Agon minus this row);
- shared opponent, cooperative, Agon, and the ablations margin reward and fixed roles
  (`baselines.agon_grpo`), each reported as its cascade in the direction chosen on the
  validation split, per seed; "Agon: drafter alone" is that direction's drafter by itself.

pass@1 pools problems × samples × seeds as Bernoulli trials (95% Clopper-Pearson); the
per-seed values are listed beside it. Wall time and rollouts are per method, summed over
seeds, so compute parity is visible. Jobs (one per method and seed) run in `--jobs`
processes; each writes its learner's run directory and a log under `--runs-dir`.
Outputs: `benchmarks/results/<name>.{json,md}` and `<name>_pass_at_1.png`.
`--from-results benchmarks/results/<name>.json` rebuilds the table and plot from a finished
run (its run directories must still exist) without training anything again.

GPU recipe, the paper's setting (not run here): the learners' shared options pass through
as `--learner.*`; these are the flags of `configs/paper_qwen3_0.6b.sh`:

    python -m benchmarks.replicate --group-size 8 --jobs 1 --learner.model Qwen/Qwen3-0.6B \\
      --learner.problems deepmath:/path/to/DeepMath-103K/data --learner.train-tiers all \\
      --learner.template default --learner.lora-rank 16 --learner.lr 5e-5 \\
      --learner.sampling.temperature 0.6 --learner.sampling.top-p 0.95 --learner.sampling.max-new-tokens 8192 \\
      --learner.eval.temperature 0.6 --learner.eval.top-p 0.95 --learner.eval.max-new-tokens 8192 \\
      --learner.eval.samples 4 --learner.eval.problems 300 --learner.eval.tier all \\
      --learner.problems-per-step 8 --learner.steps 375 --learner.checkpoint-every 25 \\
      --learner.eval-every 50 --learner.device cuda --learner.threads 8

That is 18 training runs (6 trained methods × 3 seeds); at that config's rough 10-20
GPU-hours per run (its estimate, not a measurement), about 180-360 GPU-hours plus evaluation.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import tyro
from tqdm import tqdm

from baselines import agon_grpo, grpo
from baselines.config import EvalConfig, LearnerArgs, from_dict, policy_template
from baselines.policy import SamplingParams

from .replicate_table import TRAINED, report
from .report import RESULTS

JOB_OVERHEAD_S = 6.0  # model loading, TensorBoard and plots per job: an assumption, not a measurement


def cpu_budget() -> LearnerArgs:
    """The learners' shared options, sized so the full table takes about 2 h on 2 CPU cores."""
    return LearnerArgs(steps=100, problems_per_step=2, eval_every=25, threads=1, progress=False,
                       sampling=SamplingParams(max_new_tokens=80), eval=EvalConfig(samples=2, max_new_tokens=80))


@dataclass
class Args:
    """Every method of the paper's table at equal rollout compute, several seeds."""

    quick: bool = False
    """smoke test for `make test`: 1 seed, 2 steps, 4 problems, 24 tokens (overrides the budget)"""
    seeds: int = 3
    """seeds per method (0, 1, ...)"""
    group_size: int = 8
    """N (the paper's 8): Agon's drafts per problem per step; every method gets 2N rollouts per problem per step"""
    moa_k: int = 4
    """MoA proposals per problem (split over both models)"""
    jobs: int = 2
    """jobs run in parallel processes (1: in this process)"""
    runs_dir: str = "runs/replicate"
    """parent of every job's run directory and log"""
    results_dir: str = str(RESULTS)
    """where <name>.json, <name>.md and the plot go"""
    name: str = "replicate"
    """results file stem (--quick makes it replicate_quick)"""
    from_results: str | None = None
    """a finished run's <name>.json: rebuild its table and plot from it and its run directories, training nothing
    (its own configuration is used; of the other options only --results-dir counts)"""
    learner: LearnerArgs = field(default_factory=cpu_budget)
    """what every learner and evaluation shares: model, data, sampling, optimiser, steps, evaluation size"""

    def budget(self) -> "Args":
        if not self.quick:
            return self
        name = "replicate_quick" if self.name == "replicate" else self.name
        runs = "runs/replicate_quick" if self.runs_dir == "runs/replicate" else self.runs_dir
        small = replace(self.learner, steps=2, problems_per_step=2, eval_every=0,
                        sampling=replace(self.learner.sampling, max_new_tokens=24),
                        eval=replace(self.learner.eval, problems=4, samples=1, max_new_tokens=24))
        return replace(self, seeds=1, group_size=2, moa_k=2, jobs=1, name=name, runs_dir=runs, learner=small)

    def validate(self) -> None:
        for f in ("seeds", "jobs", "moa_k"):
            if getattr(self, f) < 1:
                raise SystemExit(f"error: --{f.replace('_', '-')} must be at least 1, got {getattr(self, f)}")
        self.learner.validate("group-size", self.group_size)
        if self.learner.resume:
            raise SystemExit("error: --learner.resume is not supported here; every job starts fresh")


# ---------------------------------------------------------------- jobs (each runs in a worker process)
def learner_args(cfg: Args, method: str, seed: int):
    learner, options = TRAINED[method]
    # The final checkpoint must hold the trained weights (the self-refinement job reads them back).
    L = cfg.learner
    every = L.checkpoint_every if L.checkpoint_every and L.steps % L.checkpoint_every == 0 else L.steps
    L = replace(L, seed=seed, out_dir=cfg.runs_dir, run_name=f"{learner}-{slug(method)}-s{seed}",
                checkpoint_every=every, progress=False)
    shared = {f.name: getattr(L, f.name) for f in fields(LearnerArgs)}
    if learner == "grpo":  # GRPO trains model A of the pair
        shared["model"] = str(L.model_spec().parts[0])
        return grpo.Args(**shared, rollouts_per_problem=2 * cfg.group_size)
    return agon_grpo.Args(**shared, group_size=cfg.group_size, **options)


def slug(method: str) -> str:
    return method.split(" (")[0].replace(" ", "_")


def train_job(cfg: Args, method: str, seed: int, **_) -> dict:
    """Train one method; its reported rows come from the learner's own evaluations."""
    args = learner_args(cfg, method, seed)
    (grpo if TRAINED[method][0] == "grpo" else agon_grpo).main(args)
    return run_rows(cfg, method, Path(args.out_dir) / args.run_name)


def run_rows(cfg: Args, method: str, run_dir: Path) -> dict:
    """A trained method's rows, curve and compute, read from its learner's run directory."""
    summary = json.loads((run_dir / "summary.json").read_text())
    history = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    before, after = ({r["method"]: r for r in summary[k]} for k in ("before", "after"))
    if method == "GRPO":
        key, direction, rows = "GRPO", None, {"zero-shot": before["GRPO"], "GRPO": after["GRPO"]}
    else:  # a pair: the cascade in the direction chosen on validation
        key = direction = summary["direction"]
        rows = {method: after[direction]}
        if method == "Agon":
            rows["Agon: drafter alone"] = after[direction.split("→")[0]]
            rows["cascade untrained"] = before[direction]
    curve = [(0, before[key]["pass@1"])] + [(r["step"], r[f"eval/{key}"]) for r in history if f"eval/{key}" in r]
    return {"rows": rows, "curve": curve, "direction": direction, "run_dir": str(run_dir),
            "train_rollouts": cfg.learner.steps * cfg.learner.problems_per_step * 2 * cfg.group_size,
            "train_wall_s": sum(r.get("step_time", 0.0) for r in history)}


def self_job(cfg: Args, seed: int, grpo_run: str, **_) -> dict:
    """Self-refinement and the two-pass self-cascade of seed `seed`'s trained GRPO model."""
    from baselines.runs import load_run, run_args
    from baselines.single_model import evaluate_self_cascade, evaluate_self_refine

    common = run_args(grpo_run)
    common = replace(common, seed=seed)
    common.seed_everything()
    policy = load_run(grpo_run, common.device, common.backend)["GRPO"]
    test = common.load("test", common.eval.tier, common.eval.problems)
    ecfg = replace(common.eval, greedy=False)
    game = common.game(model_template=policy_template([policy]), format_weight=common.format_weight)
    rows, walls = {}, {}
    for name, evaluate in (("self-refinement", evaluate_self_refine), ("GRPO two-pass self-cascade", evaluate_self_cascade)):
        t0 = time.perf_counter()
        rows[name] = evaluate(policy, test, game, ecfg, common.eval_seed())
        walls[name] = time.perf_counter() - t0
    return {"rows": rows, "row_wall_s": walls}


def moa_job(cfg: Args, seed: int, **_) -> dict:
    """Untrained MoA on the base pair: both models propose, A aggregates."""
    from baselines.moa import MoAConfig, evaluate_moa
    from baselines.policy import load_pair

    common = replace(cfg.learner, seed=seed)
    common.seed_everything()
    a, b = load_pair(common.model_spec(), lora_rank=common.lora_rank, device=common.device, backend=common.backend, seed=seed,
                     reference=False)
    test = common.load("test", common.eval.tier, common.eval.problems)
    game = common.game(model_template=policy_template([a, b]), format_weight=common.format_weight)
    row = evaluate_moa({"A": a, "B": b}, test, game, MoAConfig(k=cfg.moa_k), replace(common.eval, greedy=False),
                       common.eval_seed())
    return {"rows": {"MoA untrained": row}}


KINDS = {"train": train_job, "self": self_job, "moa": moa_job}


def warm_imports() -> None:
    """Pay a worker's one-off imports up front, so the first job's wall time is comparable."""
    import matplotlib.pyplot  # noqa: F401
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast  # noqa: F401


def run_job(job: dict) -> dict:
    """Run one job with its output in its own log file; returns its result plus wall time."""
    t0 = time.perf_counter()
    Path(job["log"]).parent.mkdir(parents=True, exist_ok=True)
    with open(job["log"], "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        result = KINDS[job["kind"]](**job)
    return {**result, "job": job["id"], "kind": job["kind"], "seed": job["seed"], "wall_s": time.perf_counter() - t0}


# ---------------------------------------------------------------- the time estimate
def job_completions(cfg: Args, job: dict) -> tuple[int, int]:
    """(training rollouts, evaluation completions) a job will sample, counted from the protocol."""
    L = cfg.learner
    P, S, K = L.eval.problems, L.eval.samples, min(100, L.eval.problems)
    periodic = (L.steps - 1) // L.eval_every if L.eval_every else 0
    if job["kind"] == "moa":
        return 0, P * S * (cfg.moa_k + 1)
    if job["kind"] == "self":
        return 0, 2 * 2 * P * S
    rollouts = L.steps * L.problems_per_step * 2 * cfg.group_size
    if job["method"] == "GRPO":  # before and after with greedy, plus the periodic slices
        return rollouts, 2 * P * (S + 1) + periodic * K * S
    # both models alone and both cascades (2 stages), before and after; validation cascades; periodic slices
    return rollouts, 2 * 6 * P * (S + 1) + 4 * P * S + periodic * 6 * K * S


def calibrate(cfg: Args) -> tuple[float, float]:
    """Seconds per training rollout (sample, grade, update) and per evaluation completion,
    measured on one real GRPO step and one small evaluation in this process."""
    from baselines.evaluate import evaluate_single
    from baselines.policy import load_pair
    from baselines.update import make_optimizer

    args = learner_args(cfg, "GRPO", 0)
    args = replace(args, seed=0)
    args.seed_everything()
    policy = load_pair(args.model_spec(), lora_rank=args.lora_rank, device=args.device, backend=args.backend,
                       reference=False, seed=0)[0]
    game = args.game(model_template=policy_template([policy]), format_weight=args.format_weight)
    opt, sched = make_optimizer(policy, args)
    train = args.load("train", args.train_tiers)
    test = args.load("test", args.eval.tier, 64)
    grpo.grpo_step(0, args, game, train, policy, opt, sched)  # warm-up: first calls pay one-off costs
    t0 = time.perf_counter()
    grpo.grpo_step(1, args, game, train, policy, opt, sched)
    per_rollout = (time.perf_counter() - t0) / (args.problems_per_step * 2 * cfg.group_size)
    t0 = time.perf_counter()
    evaluate_single(policy, test, game, replace(args.eval, greedy=False), args.eval_seed())
    return per_rollout, (time.perf_counter() - t0) / (len(test) * args.eval.samples)


# ---------------------------------------------------------------- the run
def main(args: Args) -> dict:
    if args.from_results:
        cfg, results, estimate, wall = rebuild(Path(args.from_results), args.results_dir)
    else:
        cfg = args.budget()
        cfg.validate()
        results, estimate, wall = run_all(cfg)
    return report(cfg, results, estimate, wall, "python -m benchmarks.replicate " + " ".join(sys.argv[1:]),
                  rebuilt=bool(args.from_results))


def rebuild(path: Path, results_dir: str) -> tuple[Args, list[dict], float, float]:
    """A finished run's config (writing to `results_dir`) and job results, with trained rows
    re-read from its run directories."""
    if not path.exists():
        raise SystemExit(f"error: --from-results {path}: no such file")
    data = json.loads(path.read_text())
    raw = data["config"]
    cfg = Args(**{**raw, "from_results": None, "results_dir": results_dir, "learner": from_dict(LearnerArgs, raw["learner"])})
    methods = {slug(m): m for m in TRAINED}
    for res in data["results"]:
        if res["kind"] == "train":
            if not Path(res["run_dir"], "summary.json").exists():
                raise SystemExit(f"error: {res['run_dir']}/summary.json is missing; rebuilding needs the run directories")
            res.update(run_rows(cfg, methods[res["job"].rsplit("-s", 1)[0]], Path(res["run_dir"])))
    return cfg, data["results"], data["estimated_s"], data["wall_s"]


def run_all(cfg: Args) -> tuple[list[dict], float, float]:
    """Run every job (training, MoA, self-refinement); returns (results, estimated s, wall s)."""
    t_start = time.perf_counter()
    jobs = [{"id": f"{slug(m)}-s{s}", "kind": "train", "method": m, "seed": s} for s in range(cfg.seeds) for m in TRAINED]
    jobs += [{"id": f"moa-s{s}", "kind": "moa", "method": "MoA untrained", "seed": s} for s in range(cfg.seeds)]
    jobs.sort(key=lambda j: j["method"] != "GRPO")  # GRPO first: the self jobs wait on it
    for j in jobs:
        j.update(cfg=cfg, log=str(Path(cfg.runs_dir) / f"{j['id']}.log"))
    self_jobs = {s: {"id": f"self-s{s}", "kind": "self", "method": "self", "seed": s, "cfg": cfg,
                     "log": str(Path(cfg.runs_dir) / f"self-s{s}.log")} for s in range(cfg.seeds)}

    per_rollout, per_completion = calibrate(cfg)
    counts = [job_completions(cfg, j) for j in jobs + list(self_jobs.values())]
    serial = sum(r * per_rollout + e * per_completion + JOB_OVERHEAD_S for r, e in counts)
    estimate = serial / min(cfg.jobs, len(counts))
    print(f"replicate: {len(counts)} jobs ({len(TRAINED)} trained methods + MoA + self-refinement/self-cascade, "
          f"{cfg.seeds} seed(s)) in {cfg.jobs} process(es); measured {1e3 * per_rollout:.1f} ms per training rollout, "
          f"{1e3 * per_completion:.1f} ms per evaluation completion; estimated {estimate / 60:.1f} min", flush=True)

    results, bar = [], tqdm(total=len(counts), desc="replicate", unit="job", dynamic_ncols=True)

    def done(res: dict) -> dict | None:
        results.append(res)
        bar.update()
        bar.set_postfix_str(f"{res['job']} in {res['wall_s']:.0f}s")
        if res["kind"] == "train" and "GRPO" in res["rows"]:  # its trained model can now be read back
            return {**self_jobs[res["seed"]], "grpo_run": res["run_dir"]}
        return None

    if cfg.jobs == 1:
        queue = list(jobs)
        while queue:
            follow = done(run_job(queue.pop(0)))
            queue += [follow] if follow else []
    else:
        with ProcessPoolExecutor(cfg.jobs, mp_context=mp.get_context("spawn"), initializer=warm_imports) as pool:
            pending = {pool.submit(run_job, j) for j in jobs}
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    follow = done(f.result())
                    if follow:
                        pending.add(pool.submit(run_job, follow))
    bar.close()
    return results, estimate, time.perf_counter() - t_start


if __name__ == "__main__":
    main(tyro.cli(Args))
