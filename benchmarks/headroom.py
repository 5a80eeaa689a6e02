"""Headroom: how much a GRPO learner could gain on a model before any training.

    python -m benchmarks.headroom [--model tiny:a] [--tiers medium,hard] [--temperature 0.7,1.0]

Per tier and per problem family (`metadata["family"]`) of the validation split (the test
split is kept for final numbers), `--samples` completions per problem at each temperature:

- pass@k for k = 1, 4, 16 (those up to `--samples`), the unbiased estimator averaged over
  problems (`baselines.diagnostics.pass_at_k`). pass@k well above pass@1 means the model
  can already solve what it usually misses: sharpening alone has room;
- the group kinds GRPO would see with groups of `--group` (each problem's first `--group`
  samples, paid 2c + λφ by the game's own `grade_solo`): mixed by correctness (the signal),
  spread by the format term only, no spread at all, all right, all wrong;
- greedy accuracy, and greedy − sampled pass@1 (what temperature costs).

Everything runs through the project's own loading, prompts, sampler and grader, so the
numbers are the ones a learner would start from.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Literal

import torch
from tqdm import tqdm

from baselines.config import BaseArgs
from baselines.diagnostics import group_stats, pass_at_k
from baselines.evaluate import CHUNK, chunk_seed, clopper_pearson
from baselines.policy import SamplingParams, load_policy
from baselines.rollouts import Rollouts
from benchmarks.report import RESULTS, command_line, require_positive, write_report

GROUP_COLUMNS = {"mixed": "groups/mixed_correct", "format-only": "groups/format_only", "zero-std": "groups/zero_std",
                 "all right": "groups/all_right", "all wrong": "groups/all_wrong"}


@dataclass
class Args:
    """Headroom options."""

    model: str = "tiny:a"
    """one model: 'tiny:a', 'tiny:b', or anything `baselines.policy.load_policy` takes"""
    problems: str = "arith"
    """problem source: 'arith' (bundled), a .jsonl path, or 'deepmath:PATH'"""
    split: Literal["validation", "train"] = "validation"
    """split to measure on (the test split is not offered: it is kept for final numbers)"""
    tiers: str = "medium,hard"
    """comma-separated difficulty tiers, each measured on its own ('all' for every tier as one)"""
    per_tier: int = 200
    """problems per tier (the first ones of the split)"""
    samples: int = 16
    """sampled completions per problem"""
    group: int = 8
    """GRPO group size for the group kinds (each problem's first `group` samples)"""
    ks: str = ""
    """comma-separated k for pass@k (default: 1, 4, 16, those up to --samples)"""
    temperature: str = "0.7"
    """sampling temperature, or a comma-separated list such as '0.7,1.0'"""
    max_new_tokens: int = 128
    """completion length limit in tokens"""
    format_weight: float = 0.5
    """λ, the format term's weight in the reward 2c + λφ (0: no group is spread by format alone)"""
    seed: int = 0
    """seed for model loading and sampling (the same draws for every temperature)"""
    threads: int = 2
    """torch CPU threads"""
    results_dir: str = str(RESULTS)
    """where `<name>.json`, `<name>.md` and `<name>.png` go"""
    name: str = "headroom"
    """base name of the output files"""

    def temperatures(self) -> list[float]:
        try:
            ts = [float(t) for t in self.temperature.split(",") if t.strip()]
        except ValueError:
            raise SystemExit(f"error: --temperature must be numbers separated by commas, got {self.temperature!r}") from None
        if not ts or any(t <= 0 for t in ts):
            raise SystemExit(f"error: --temperature must be positive (greedy is always reported), got {self.temperature!r}")
        return ts

    def k_values(self) -> list[int]:
        if not self.ks:
            return [k for k in (1, 4, 16) if k <= self.samples]
        try:
            ks = sorted({int(k) for k in self.ks.split(",") if k.strip()})
        except ValueError:
            raise SystemExit(f"error: --ks must be integers separated by commas, got {self.ks!r}") from None
        if not ks or not all(1 <= k <= self.samples for k in ks):
            raise SystemExit(f"error: --ks must lie in 1..--samples ({self.samples}), got {self.ks!r}")
        return ks

    def check(self) -> None:
        """Fail before any work, naming the option."""
        require_positive(self, ("per_tier", "samples", "max_new_tokens", "threads"))
        if not 2 <= self.group <= self.samples:
            raise SystemExit(f"error: --group must lie in 2..--samples ({self.samples}), got {self.group}")
        if not [t for t in self.tiers.split(",") if t.strip()]:
            raise SystemExit("error: --tiers names no tier")
        self.temperatures()
        self.k_values()

    def command(self) -> str:
        """The command line that reproduces this run (options left at their default omitted)."""
        return command_line("benchmarks.headroom", self)


def sample_tier(policy, game, problems, samples, params, seed, bar) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rewards, correctness and completion lengths in tokens, each [P, samples], sampled in chunks of problems."""
    rs, cs, lengths = [], [], []
    for i in range(0, len(problems), CHUNK):
        part = problems[i:i + CHUNK]
        gens = Rollouts.sample(policy, part, game.drafter_prompts(part), samples, params, chunk_seed(seed, i // CHUNK))
        rewards, verdicts = game.grade_solo(gens.each_problem, gens.texts)
        rs.append(gens.grid(rewards))
        cs.append(gens.grid([v.correct for v in verdicts]).bool())
        lengths.append(gens.grid([len(g.completion_ids) for g in gens.gens]))
        bar.update(len(part))
    return torch.cat(rs), torch.cat(cs), torch.cat(lengths)


def greedy_tier(policy, game, problems, max_new_tokens, bar) -> torch.Tensor:
    """Correctness [P] of one greedy completion per problem."""
    out = []
    for i in range(0, len(problems), CHUNK):
        part = problems[i:i + CHUNK]
        texts = [gs[0].text for gs in policy.generate(game.drafter_prompts(part), 1,
                                                      SamplingParams(max_new_tokens=max_new_tokens, greedy=True))]
        out += [v.correct for v in game.grade_solo(part, texts)[1]]
        bar.update(len(part))
    return torch.tensor(out, dtype=torch.bool)


def headroom_row(r: torch.Tensor, c: torch.Tensor, length: torch.Tensor, greedy: torch.Tensor, ks: list[int],
                 group: int) -> dict:
    """pass@k, the pass@1 interval, greedy, the group kinds of the first `group` samples, mean length."""
    n, counts = c.shape[1], c.sum(1).tolist()
    row = {"problems": len(c)}
    row.update({f"pass@{k}": sum(pass_at_k(n, x, k) for x in counts) / len(counts) for k in ks})
    lo, hi = clopper_pearson(sum(counts), c.numel())
    row["pass@1 95% CI"] = f"[{lo:.3f}, {hi:.3f}]"
    row["greedy"] = float(greedy.float().mean())
    row["greedy − pass@1"] = row["greedy"] - sum(counts) / c.numel()
    stats = group_stats(r[:, :group], c[:, :group])
    row.update({col: stats[key] for col, key in GROUP_COLUMNS.items()})
    row["mean tokens"] = float(length.mean())
    return row


def plot(curves: list[dict], path: Path) -> Path:
    """pass@k against k, one line per tier and temperature."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for cv in curves:
        ax.plot(cv["k"], cv["pass@k"], marker="o", ms=3, label=f"{cv['tier']}, T={cv['T']}")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="k (samples)", ylabel="pass@k", ylim=(0, 1), title="pass@k before training")
    ticks = [2 ** i for i in range(len(curves[0]["k"]).bit_length())]
    ax.set_xticks(ticks, [str(k) for k in ticks])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(args: Args) -> dict:
    args.check()
    t0 = time.perf_counter()
    temps, ks = args.temperatures(), args.k_values()
    base = BaseArgs(model=args.model, problems=args.problems, seed=args.seed, threads=args.threads)
    spec = base.model_spec()
    by_tier = {}
    for tier in dict.fromkeys(t.strip() for t in args.tiers.split(",") if t.strip()):
        try:
            by_tier[tier] = base.load(args.split, tier, args.per_tier)
        except SystemExit as e:
            raise SystemExit(f"error: --tiers {tier!r}: {str(e).removeprefix('error: ')}") from None
    base.seed_everything()  # also torch.set_num_threads(args.threads)
    policy = load_policy(spec, reference=False, backend="hf", seed=args.seed)
    game = base.game(model_template=policy.template, format_weight=args.format_weight)

    rows, curves = [], []
    total = sum(len(ps) for ps in by_tier.values()) * (len(temps) + 1)
    with tqdm(total=total, desc="headroom", unit="problem", dynamic_ncols=True, disable=None) as bar:
        for tier, ps in by_tier.items():
            bar.set_postfix_str(f"{tier} greedy")
            greedy = greedy_tier(policy, game, ps, args.max_new_tokens, bar)
            families = [p.metadata.get("family", "") for p in ps]
            for temp in temps:
                bar.set_postfix_str(f"{tier} T={temp}")
                params = SamplingParams(temperature=temp, max_new_tokens=args.max_new_tokens)
                r, c, length = sample_tier(policy, game, ps, args.samples, params, args.seed, bar)
                rows.append({"tier": tier, "T": temp, "family": "all",
                             **headroom_row(r, c, length, greedy, ks, args.group)})
                for fam in sorted(set(families) - {""}):
                    m = torch.tensor([f == fam for f in families])
                    rows.append({"tier": tier, "T": temp, "family": fam,
                                 **headroom_row(r[m], c[m], length[m], greedy[m], ks, args.group)})
                counts = c.sum(1).tolist()
                k_all = list(range(1, args.samples + 1))
                curves.append({"tier": tier, "T": temp, "k": k_all,
                               "pass@k": [sum(pass_at_k(args.samples, x, k) for x in counts) / len(counts) for k in k_all]})
    wall = time.perf_counter() - t0

    versions = {lib: version(lib) for lib in ("torch", "transformers")}
    notes = [
        f"Model {args.model!r} on the {args.split} split of {args.problems!r}, the first {args.per_tier} problems per tier; "
        f"{args.samples} samples per problem at each temperature, max {args.max_new_tokens} new tokens.",
        "pass@k: the unbiased estimator 1 − C(n−c, k)/C(n, k) (Chen et al., 2021) averaged over problems; the pass@1 "
        "interval is Clopper-Pearson over problems × samples (samples of a problem are correlated, so it is optimistic).",
        f"Group kinds over each problem's first {args.group} samples, paid 2c + λφ with λ = {args.format_weight}: "
        "mixed (correctness varies: the signal GRPO learns from), format-only (correctness constant, reward spread by "
        "the format term alone: it reinforces formatted wrong answers), zero-std (no spread: no gradient); "
        "mixed + all right + all wrong = 1.",
        "greedy: one arg-max completion per problem; greedy − pass@1 is what sampling at T costs.",
        f"{args.threads} torch thread(s); torch {versions['torch']}, transformers {versions['transformers']}; "
        f"{wall:.0f} s wall.",
    ]
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = plot(curves, out / f"{args.name}.png")
    jpath, mpath = write_report(args.name, f"Headroom before training: {args.model}", rows, notes,
                                {"config": dataclasses.asdict(args), "threads": args.threads, "versions": versions,
                                 "wall_s": wall, "curves": curves}, out_dir=out, command=args.command())
    with mpath.open("a") as f:
        f.write(f"\n![pass@k against k]({png.name})\n")
    print(f"outputs: {jpath}, {mpath}, {png}")
    return {"rows": rows, "curves": curves, "json": str(jpath), "md": str(mpath), "plot": str(png)}


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args, description=__doc__))
