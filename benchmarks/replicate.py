"""The paper's comparison table (Table 3) at our scale, from one command.

    python -m benchmarks.replicate            # full run: every method, 3 seeds (several hours on 2 CPU cores)
    python -m benchmarks.replicate --quick    # smoke test: every method, 1 seed, a few steps (< 90 s)
    python -m benchmarks.replicate --methods "GRPO,Agon,GRPO pair cascade"   # a subset (69 min, 2 cores)

Every method gets the same rollout compute, 2N rollouts per problem per optimizer step, on
the held-out hard tier, for `--seeds` seeds:

- zero-shot: model A untrained (GRPO's "before" row);
- GRPO with G = 2N;
- self-refinement and the GRPO two-pass self-cascade: the GRPO model revises its own
  answer, or reads its own draft's summary (`baselines.single_model`);
- MoA untrained: both untrained models propose, A aggregates (`baselines.moa`);
- cascade untrained: Agon's pair before training, in the direction Agon chose (so what
  training added to the cascade is Agon minus this row);
- the GRPO pair cascade, the control the paper lacks: model B trained by plain GRPO too, at
  the same budget, and the two GRPO models run as a cascade in the direction chosen on the
  validation split (it separates what competition adds from what cascading adds);
- shared opponent, cooperative, Agon, and the ablations margin reward and fixed roles
  (`baselines.agon_grpo`), each reported as its cascade in the direction chosen on the
  validation split, per seed; "Agon: drafter alone" is that direction's drafter by itself;
- draft-baseline Agon (variant, not the paper's method): Agon with `--challenger-baseline draft`,
  where a challenger's answer is compared only with the answers that read equally right drafts, so
  a right draft's credit does not flow to its reader. The notes give each pair method's share of
  the challenger's positive advantage that went to readers of right drafts.

pass@1 pools problems × samples × seeds as Bernoulli trials (95% Clopper-Pearson); the
per-seed values are listed beside it. A trained row is also compared with the same models
untrained on the same problems (GRPO with zero-shot, a pair with its cascade before
training): the change per problem, with a paired bootstrap interval pooled over seeds.
`--methods` picks a subset (zero-shot and the self rows come with GRPO, the untrained
cascade with Agon; MoA always runs). Wall time and rollouts are per method, summed over
seeds, so compute parity is visible. Jobs (one per method and seed) run in `--jobs`
processes; each writes its learner's run directory and a log under `--runs-dir`.
Outputs: `benchmarks/results/<name>.{json,md}` and `<name>_pass_at_1.png`.
`--from-results benchmarks/results/<name>.json` rebuilds the table and plot from a finished
run (its run directories must still exist) without training anything again.

GPU recipe, the paper's setting (not run here): the learners' shared options pass through
as `--learner.*`; these are the flags of `configs/paper_qwen3_0.6b.sh`:

    python -m benchmarks.replicate --group-size 8 --jobs 1 --learner.model Qwen/Qwen3-0.6B \\
      --learner.problems deepmath:/path/to/DeepMath-103K/data --learner.train-tiers all \\
      --learner.template default --learner.lora-rank 16 --learner.lr 5e-5 --learner.lr-schedule linear \\
      --learner.sampling.temperature 0.6 --learner.sampling.top-p 0.95 --learner.sampling.max-new-tokens 8192 \\
      --learner.eval.temperature 0.6 --learner.eval.top-p 0.95 --learner.eval.max-new-tokens 8192 \\
      --learner.eval.samples 4 --learner.eval.problems 300 --learner.eval.tier all \\
      --learner.problems-per-step 8 --learner.steps 375 --learner.checkpoint-every 25 \\
      --learner.eval-every 50 --learner.warmup-frac 0.1 --learner.device cuda --learner.threads 8

That is 21 training runs (6 trained methods and the control's model B × 3 seeds); at that
config's rough 10-20 GPU-hours per run (its estimate, not a measurement), about 210-420
GPU-hours plus evaluation. With one base model, the control's model B is a second GRPO
adapter on that base, trained from another seed (the same seed would train an identical one).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import shlex
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

import tyro
from tqdm import tqdm

from baselines import grpo
from baselines.config import EvalConfig, LearnerArgs, from_dict, policy_template

from .replicate_jobs import learner_args, run_job, run_rows, slug, warm_imports
from .replicate_table import GRPO_B, LEARNERS, PAIR_CONTROL, TRAINED, report
from .report import RESULTS, require_positive

JOB_OVERHEAD_S = 6.0  # model loading, TensorBoard and plots per job: an assumption, not a measurement
METHODS = [*TRAINED, PAIR_CONTROL]  # what --methods chooses from


def cpu_budget() -> LearnerArgs:
    """The learners' embedded defaults (the regime where GRPO learns on 2 CPU cores), one thread per job,
    evaluated on all 600 held-out hard problems."""
    return LearnerArgs(threads=1, progress=False, eval=EvalConfig(problems=600))


@dataclass
class Args:
    """Every method of the paper's table at equal rollout compute, several seeds."""

    quick: bool = False
    """smoke test for `make test`: 1 seed, 2 steps, 4 problems, 24 tokens (overrides the budget)"""
    seeds: int = 3
    """seeds per method (0, 1, ...)"""
    methods: str = "all"
    """comma-separated methods to train and report, from GRPO, shared opponent, cooperative, Agon, margin reward
    (ablation), fixed roles (ablation), draft-baseline Agon (variant) and GRPO pair cascade (it needs GRPO);
    'all': every one"""
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

    def selected(self) -> list[str]:
        """The methods --methods names, in the table's order."""
        if self.methods.strip() == "all":
            return list(METHODS)
        names = [m.strip() for m in self.methods.split(",") if m.strip()]
        unknown = [m for m in names if m not in METHODS]
        if unknown or not names:
            raise SystemExit(f"error: --methods {self.methods!r}: unknown {unknown}; choose from {METHODS} or 'all'")
        if PAIR_CONTROL in names and "GRPO" not in names:
            raise SystemExit(f"error: --methods: {PAIR_CONTROL!r} reuses each seed's GRPO run as its model A; add GRPO")
        return [m for m in METHODS if m in names]

    def validate(self) -> None:
        self.selected()
        require_positive(self, ("seeds", "jobs", "moa_k"))
        self.learner.validate("group-size", self.group_size)
        if self.learner.resume:
            raise SystemExit("error: --learner.resume is not supported here; every job starts fresh")


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
    if job["kind"] == "pair":  # both cascades on validation; the chosen one on test, trained and untrained
        return 0, (2 + 1 + 1) * 2 * P * S
    rollouts = L.steps * L.problems_per_step * 2 * cfg.group_size
    if job["method"] in ("GRPO", GRPO_B):  # before and after with greedy, plus the periodic slices
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
                       reference=False, seed=0, dtype=args.dtype)[0]
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
    this = "python -m benchmarks.replicate " + shlex.join(sys.argv[1:])
    if args.from_results:
        cfg, results, estimate, wall, trained_by = rebuild(Path(args.from_results), args.results_dir)
        return report(cfg, results, estimate, wall, trained_by, rebuilt_by=this)
    cfg = args.budget()
    cfg.validate()
    results, estimate, wall = run_all(cfg)
    return report(cfg, results, estimate, wall, this)


def rebuild(path: Path, results_dir: str) -> tuple[Args, list[dict], float, float, str]:
    """A finished run's config (writing to `results_dir`), job results (trained rows re-read from its
    run directories), time estimate, wall time and the command that trained it."""
    if not path.exists():
        raise SystemExit(f"error: --from-results {path}: no such file")
    data = json.loads(path.read_text())
    raw = data["config"]
    cfg = Args(**{**raw, "from_results": None, "results_dir": results_dir, "learner": from_dict(LearnerArgs, raw["learner"])})
    methods = {slug(m): m for m in LEARNERS}
    for res in data["results"]:
        if res["kind"] == "train":
            if not Path(res["run_dir"], "summary.json").exists():
                raise SystemExit(f"error: {res['run_dir']}/summary.json is missing; rebuilding needs the run directories")
            method = res.get("method") or methods[res["job"].rsplit("-s", 1)[0]]  # older results name no method
            res.update(run_rows(cfg, method, Path(res["run_dir"])))
    return cfg, data["results"], data["estimated_s"], data["wall_s"], data.get("command", "not recorded")


def job(cfg: Args, kind: str, method: str, seed: int, name: str | None = None, **kw) -> dict:
    """One job's description: what `run_job` runs, and where its log goes."""
    jid = f"{name or slug(method)}-s{seed}"
    return {"id": jid, "kind": kind, "method": method, "seed": seed, "cfg": cfg,
            "log": str(Path(cfg.runs_dir) / f"{jid}.log"), **kw}


def first_jobs(cfg: Args) -> list[dict]:
    """The jobs that can start at once: training per chosen method (and the control's model B) and MoA,
    per seed, the GRPO runs first because the follow-up jobs wait on them."""
    chosen = cfg.selected()
    learners = [m for m in LEARNERS if m in chosen or (m == GRPO_B and PAIR_CONTROL in chosen)]
    jobs = [job(cfg, "train", m, s) for s in range(cfg.seeds) for m in learners]
    jobs += [job(cfg, "moa", "MoA untrained", s, name="moa") for s in range(cfg.seeds)]
    return sorted(jobs, key=lambda j: j["method"] not in ("GRPO", GRPO_B))


def follow_ups(cfg: Args, res: dict, grpo_runs: dict[tuple[str, int], dict]) -> list[dict]:
    """The jobs a finished one unblocks: seed s's self job once its GRPO run exists, and the control's
    pair job once its GRPO runs of A and B both do. `grpo_runs` collects the GRPO results so far."""
    if res["kind"] != "train" or res["method"] not in ("GRPO", GRPO_B):
        return []
    s = res["seed"]
    grpo_runs[res["method"], s] = res
    out = [job(cfg, "self", "self", s, grpo_run=res["run_dir"])] if res["method"] == "GRPO" else []
    pair = [grpo_runs.get((m, s)) for m in ("GRPO", GRPO_B)]
    if PAIR_CONTROL in cfg.selected() and all(pair):
        out.append(job(cfg, "pair", PAIR_CONTROL, s, grpo_runs=[r["run_dir"] for r in pair],
                       train_rollouts=sum(r["train_rollouts"] for r in pair),
                       train_wall_s=sum(r["train_wall_s"] for r in pair)))
    return out


def run_all(cfg: Args) -> tuple[list[dict], float, float]:
    """Run every job (training, MoA, self-refinement, the GRPO pair cascade); returns (results, estimated s, wall s)."""
    t_start = time.perf_counter()
    jobs, chosen = first_jobs(cfg), cfg.selected()
    later = [{"kind": "self"}] * ("GRPO" in chosen) + [{"kind": "pair"}] * (PAIR_CONTROL in chosen)

    per_rollout, per_completion = calibrate(cfg)
    counts = [job_completions(cfg, j) for j in jobs + later * cfg.seeds]
    serial = sum(r * per_rollout + e * per_completion + JOB_OVERHEAD_S for r, e in counts)
    estimate = serial / min(cfg.jobs, len(counts))
    print(f"replicate: {len(counts)} jobs ({', '.join(chosen)}; MoA{'; self-refinement/self-cascade' * ('GRPO' in chosen)}; "
          f"{cfg.seeds} seed(s)) in {cfg.jobs} process(es); measured {1e3 * per_rollout:.1f} ms per training rollout, "
          f"{1e3 * per_completion:.1f} ms per evaluation completion; estimated {estimate / 60:.1f} min", flush=True)

    results, grpo_runs = [], {}
    bar = tqdm(total=len(counts), desc="replicate", unit="job", dynamic_ncols=True)

    def done(res: dict) -> list[dict]:
        results.append(res)
        bar.update()
        bar.set_postfix_str(f"{res['job']} in {res['wall_s']:.0f}s")
        return follow_ups(cfg, res, grpo_runs)

    if cfg.jobs == 1:
        queue = list(jobs)
        while queue:
            queue += done(run_job(queue.pop(0)))
    else:
        with ProcessPoolExecutor(cfg.jobs, mp_context=mp.get_context("spawn"), initializer=warm_imports) as pool:
            pending = {pool.submit(run_job, j) for j in jobs}
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    pending |= {pool.submit(run_job, j) for j in done(f.result())}
    bar.close()
    return results, estimate, time.perf_counter() - t_start


if __name__ == "__main__":
    main(tyro.cli(Args))
