"""The options every CLI here shares: dataclasses that nest, so each value has one home.

`BaseArgs` (model, data, evaluation, run set-up) is extended by `LearnerArgs` (sampling,
optimiser, loss, run directory) for the learners and by `InferenceArgs` (outputs) for the
inference-only methods. Nested groups keep their prefix from the command line to the code:
`--sampling.temperature` is `args.sampling.temperature`, `--eval.top-p` is `args.eval.top_p`.
A run's `config.json` is this tree as JSON; `from_dict` reads it back.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import torch
import tyro

from agon_env.game import AgonGame
from agon_env.prompts import TEMPLATES
from agon_env.rules import REWARD_SCHEMES, SUMMARY_MODES
from problems.record import Problem

from .distributed import check_launch
from .grpo_loss import LOSS_TYPES
from .policy import ModelSpec, Policy, SamplingParams
from .policy.adapters import vllm_max_lora_rank
from .runlog import check_fresh

Template = Literal[("auto", *TEMPLATES)]
RewardScheme = Literal[REWARD_SCHEMES]
SummaryMode = Literal[SUMMARY_MODES]
LossType = Literal[LOSS_TYPES]
Device = Literal["auto", "cpu", "cuda"]
Dtype = Literal["float32", "bfloat16"]
LrSchedule = Literal["linear", "cosine", "constant"]
Optimizer = Literal["adamw", "sgd"]
Backend = Literal["auto", "hf", "vllm", "server"]


@dataclass
class EvalConfig:
    """How held-out pass@1 is measured."""

    split: Literal["test", "validation"] = "test"
    """held-out split that is reported ('validation' while choosing settings, so the test split is read once; the
    cascade direction is then chosen on the problems it reports, the paper's post-hoc choice)"""
    tier: str = "hard"
    """difficulty tier of the held-out split ('all' for every tier)"""
    problems: int = 300
    """held-out problems per split (the test split reports; as many validation problems choose the cascade direction)"""
    samples: int = 4
    """completions per problem at the evaluation temperature (pass@1 is their mean)"""
    temperature: float = 0.7
    """sampling temperature for pass@1"""
    top_p: float = 1.0
    """nucleus sampling for pass@1"""
    max_new_tokens: int = 128
    """completion length limit in tokens, per model call"""
    greedy: bool = True
    """also report greedy accuracy (one extra completion per problem)"""

    def params(self, greedy: bool = False) -> SamplingParams:
        return SamplingParams(self.temperature, self.top_p, self.max_new_tokens, greedy)


@dataclass
class BaseArgs:
    """What every learner and inference method is run on."""

    model: str = "tiny"
    """'tiny' (the shipped offline pair), a local HF model dir, 'smollm2', a hub name, or 'A_PATH,B_PATH'"""
    problems: str = "arith"
    """problem source: 'arith' (bundled), a .jsonl path, or 'deepmath:PATH'"""
    template: Template = "auto"
    """prompt template: 'auto' (the model's own, e.g. 'compact' for the tiny pair; else 'code' for code problems, else 'default')"""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """held-out evaluation"""
    seed: int = 0
    """seed for data order, sampling and initialisation"""
    threads: int = 2
    """torch CPU threads (fixed, so runs are reproducible); per process under torchrun"""
    device: Device = "auto"
    """'auto' (CUDA when available), 'cpu' or 'cuda'"""
    dtype: Dtype = "float32"
    """model weights' dtype: 'float32', or 'bfloat16' (the paper's GPU setting; LoRA adapters and their optimizer
    state stay float32, and logits are upcast to float32 for sampling and log-probs)"""
    backend: Backend = "auto"
    """generation backend: 'auto' (vLLM with CUDA and vllm, else HF; HF under torchrun), 'hf', 'vllm' (not under
    torchrun) or 'server' (--servers; under torchrun too)"""
    out_dir: str = "runs"
    """parent directory of this run's outputs"""

    def model_spec(self, pair: bool = False) -> ModelSpec:
        """`--model` parsed; `pair`: for a method of two policies (`ModelSpec.as_pair`)."""
        try:
            spec = ModelSpec.parse(self.model)
            return spec.as_pair() if pair else spec
        except ValueError as e:
            raise SystemExit(f"error: --model: {e}") from None

    def seed_everything(self) -> None:
        random.seed(self.seed)
        np.random.seed(self.seed)
        torch.manual_seed(self.seed)
        torch.set_num_threads(self.threads)

    def load(self, split: str, tiers: str, limit: int | None = None) -> list[Problem]:
        """The problems of `split` in `tiers` ('all', or comma-separated), the first `limit` of them."""
        from problems import load

        try:
            if self.problems.startswith("deepmath:"):  # the paper's 3,000 / 300, plus 300 for the direction choice
                ps = load("deepmath", split=split, tier=tiers, path=self.problems.split(":", 1)[1], n_validation=300)
            else:
                ps = load(self.problems, split=split, tier=tiers)
        except ValueError as e:
            raise SystemExit(f"error: --problems {self.problems!r}: {e}") from None
        if not ps:
            raise SystemExit(f"error: no {split!r} problems in {self.problems!r} for tiers {tiers!r}")
        return ps[:limit] if limit else ps

    def game(self, domain: str = "math", model_template: str | None = None, reward: str = "agon",
             format_weight: float = 0.5, **kw) -> AgonGame:
        """The game these options play; `model_template` is the policy's own (`Policy.template`)."""
        template = self.template
        if template == "auto":
            template = model_template or ("code" if domain == "code" else "default")
        return AgonGame(reward=reward, format_weight=format_weight, template=template, domain=domain, **kw)

    def check(self) -> None:
        """Fail before any work, naming the option."""
        self.model_spec()
        if self.backend == "server" and not isinstance(self, LearnerArgs):
            raise SystemExit("error: --backend server is for the learners (agon_grpo, grpo); use hf, vllm or auto")
        if self.threads < 1:
            raise SystemExit(f"error: --threads must be at least 1, got {self.threads}")
        for name in ("problems", "samples", "max_new_tokens"):
            if getattr(self.eval, name) < 1:
                raise SystemExit(f"error: --eval.{name.replace('_', '-')} must be at least 1, got {getattr(self.eval, name)}")
        if not 0 < self.eval.top_p <= 1 or self.eval.temperature < 0:  # as vLLM refuses them, before any work
            raise SystemExit(f"error: --eval.top-p must be in (0, 1] and --eval.temperature at least 0, got "
                             f"{self.eval.top_p} and {self.eval.temperature}")


@dataclass
class LearnerArgs(BaseArgs):
    """Options shared by both learners."""

    train_tiers: str = "hard"
    """comma-separated difficulty tiers to train on ('all' for every tier); the default trains where it evaluates"""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    """how training rollouts are sampled (T=1.0 with lr 2e-4 collapsed tiny models)"""
    steps: int = 150
    """optimizer steps"""
    problems_per_step: int = 16
    """problems per optimizer step over all processes (each gets a whole group; fewer left the tiny pair's GRPO
    gradient mostly noise); under torchrun a multiple of the process count, split evenly"""
    lr: float = 1e-4
    """peak learning rate (reached after the linear warm-up)"""
    lr_schedule: LrSchedule = "constant"
    """after warm-up: 'linear' decay or 'cosine' decay to lr · lr_floor, or 'constant'"""
    lr_floor: float = 0.0
    """final learning rate as a fraction of the peak, for 'linear' and 'cosine'"""
    warmup_frac: float = 0.05
    """fraction of steps spent warming up"""
    optimizer: Optimizer = "adamw"
    """'adamw' (β = 0.9, 0.999; no weight decay) or 'sgd' (momentum 0.9: steps scale with the gradient,
    which Adam's normalisation does not)"""
    max_grad_norm: float = 1.0
    """gradient clipping norm"""
    micro_batch: int = 0
    """completions per forward/backward of the update, gradients accumulated (0: all at once); the same
    step within float rounding, with the update's activation memory bounded by this many completions"""
    share_prompts: bool = False
    """the update computes each distinct prompt once and its completions attend to that KV cache (a GRPO
    group's prompt once, not once per completion): the same step within float rounding, cheaper when
    prompts are a large share of the tokens (HF backend; off keeps earlier runs' numbers bitwise)"""
    loss_type: LossType = "grpo"
    """'grpo' (per-sequence mean), 'dapo' (token mean over the batch) or 'dr_grpo' (constant normaliser)"""
    scale_std: bool = True
    """divide advantages by the group's std (off: Dr. GRPO's centring only)"""
    eps_low: float = 0.2
    """lower clip of the importance ratio: 1 - eps_low"""
    eps_high: float = 0.2
    """upper clip of the importance ratio: 1 + eps_high (DAPO uses 0.28)"""
    beta: float = 0.0
    """KL weight to the starting model (the LoRA-disabled base, or a frozen copy of a full model such as the tiny pair)"""
    tempered_logprobs: bool = False
    """score the update under the sampling distribution, logits / temperature, as TRL does (default: raw logits)"""
    lora_rank: int = 16
    """LoRA rank for HF models (the tiny pair is trained fully; 0: grpo trains the full model)"""
    servers: str = ""
    """--backend server: comma-separated base URLs of vLLM OpenAI servers of the base model, each started with
    `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora --max-loras 2 --max-lora-rank R`"""
    adapter_dir: str = ""
    """--backend server: where each adapter version is saved for the servers to load; a path every server can
    read (a shared filesystem); default: a temporary directory, readable only by servers on this machine"""
    is_cap: float = 0.0
    """cap of truncated importance sampling for a sampler unlike the trainer (server, vLLM): on-policy ratio, each
    token weighted by min(exp(logp_train − logp_sampler), cap) as TRL's vllm_importance_sampling_cap; 0: off"""
    format_weight: float = 0.5
    """λ, the format term's weight in every reward (0: correctness only, so no group's spread comes from format alone)"""
    eval_every: int = 50
    """steps between held-out evaluations on a 100-problem slice (0: only before and after)"""
    run_name: str = ""
    """run directory name (default: learner-seed-time)"""
    overwrite: bool = False
    """replace the run already in out-dir/run-name (its checkpoints, metrics, events and plots are deleted when
    this run starts); without it a fresh run there is refused"""
    checkpoint_every: int = 50
    """steps between checkpoints (0: none)"""
    resume: str = ""
    """a run directory to continue from its last checkpoint, with its own options (--servers and --adapter-dir,
    when given, replace its own)"""
    progress: bool = True
    """show progress bars"""

    def validate(self, group_name: str, group: int) -> None:
        """Fail before any work, naming the option."""
        self.check()
        if group < 2:
            raise SystemExit(f"error: --{group_name} must be at least 2 (advantages are relative to the group), got {group}")
        for name in ("steps", "problems_per_step"):
            if getattr(self, name) < 1:
                raise SystemExit(f"error: --{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.sampling.max_new_tokens < 1:
            raise SystemExit(f"error: --sampling.max-new-tokens must be at least 1, got {self.sampling.max_new_tokens}")
        if self.sampling.greedy:
            raise SystemExit("error: --sampling.greedy: training needs sampled rollouts")
        if not 0 < self.sampling.top_p <= 1 or self.sampling.temperature <= 0:  # temperature 0 is greedy
            raise SystemExit(f"error: --sampling.top-p must be in (0, 1] and --sampling.temperature above 0, got "
                             f"{self.sampling.top_p} and {self.sampling.temperature}")
        if not 0.0 <= self.lr_floor <= 1.0:
            raise SystemExit(f"error: --lr-floor is a fraction of --lr, in [0, 1], got {self.lr_floor}")
        if self.lora_rank < 0:
            raise SystemExit(f"error: --lora-rank must be at least 0 (0: grpo trains the full model), got {self.lora_rank}")
        if self.micro_batch < 0:
            raise SystemExit(f"error: --micro-batch must be at least 1 (0: the whole batch at once), got {self.micro_batch}")
        if self.lr <= 0:
            raise SystemExit(f"error: --lr must be positive, got {self.lr}")
        if self.tempered_logprobs and self.sampling.temperature <= 0:
            raise SystemExit("error: --tempered-logprobs needs --sampling.temperature > 0")
        self._check_server()
        if self.is_cap < 0:
            raise SystemExit(f"error: --is-cap must be positive (0: off), got {self.is_cap}")
        if self.is_cap and self.tempered_logprobs:
            raise SystemExit("error: --is-cap weighs raw-logit log-probs (the sampler's); it does not combine "
                             "with --tempered-logprobs")
        if self.resume and not Path(self.resume).is_dir():
            raise SystemExit(f"error: --resume {self.resume!r} is not a run directory")
        if not self.resume and self.run_name and os.environ.get("RANK", "0") == "0":  # rank 0 alone writes the run
            check_fresh(Path(self.out_dir) / self.run_name, self.overwrite)
        check_launch(self.problems_per_step, self.backend, self.device)

    def server_urls(self) -> list[str]:
        """The --servers URLs, in order."""
        return [u.strip() for u in self.servers.split(",") if u.strip()]

    def _check_server(self) -> None:
        if self.backend != "server":
            if self.servers or self.adapter_dir:
                raise SystemExit(f"error: --servers and --adapter-dir are for --backend server, got --backend {self.backend}")
            return
        urls = self.server_urls()
        if not urls:
            raise SystemExit("error: --backend server needs --servers URL[,URL...]: vLLM OpenAI servers of the base, "
                             "each started with `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora "
                             f"--max-loras 2 --max-lora-rank {vllm_max_lora_rank(max(self.lora_rank, 1))}`")
        bad = [u for u in urls if not u.startswith(("http://", "https://"))]
        if bad:
            raise SystemExit(f"error: --servers: {', '.join(map(repr, bad))} is not an http(s):// URL "
                             "(e.g. http://127.0.0.1:8000)")
        adapters = all(Path(p, "adapter_config.json").exists() for p in self.model_spec().parts)
        if not adapters and (not self.model_spec().one_base or self.lora_rank < 1):
            raise SystemExit(f"error: --backend server serves LoRA adapters on one base; --model {self.model!r} is "
                             "full models (the tiny pair is trained fully; --lora-rank 0 trains fully): use --backend hf")

    def eval_seed(self) -> int:
        """Evaluation draws: fixed per run seed, so before/after numbers use the same draws."""
        return self.seed + 10_000


@dataclass
class InferenceArgs(BaseArgs):
    """Options shared by the inference-only methods (cascade, MoA, self-refinement).

    Given a learner's run directory, a method evaluates on that run's problem source with its
    `--eval.*` settings, except for what its command line gives (`cli` records it, so a flag
    given at its default value counts too) and, for arguments built in code, any value other
    than the default."""

    eval_given: tyro.conf.Suppress[tuple[str, ...]] = ()
    """the `--eval.*` fields the command line gave (set by `cli`, not an option)"""
    problems_given: tyro.conf.Suppress[bool] = False
    """whether the command line gave --problems (set by `cli`, not an option)"""
    unused_eval: ClassVar[dict[str, str]] = {}  # --eval.* fields this method does not read: why, and what to use

    def check(self) -> None:
        super().check()
        for name, why in self.unused_eval.items():  # refused, not silently ignored
            if name in self.eval_given or getattr(self.eval, name) != getattr(EvalConfig(), name):
                raise SystemExit(f"error: --eval.{name.replace('_', '-')} does not apply here: {why}")

    @classmethod
    def cli(cls, argv: list[str] | None = None):
        """Parse `argv` (default: sys.argv) with tyro, recording which `--eval.*` flags it gave."""
        argv = sys.argv[1:] if argv is None else list(argv)
        names = {f.name for f in dataclasses.fields(EvalConfig)}
        given = set()
        for a in argv:
            if a.startswith("--eval."):
                name = a[len("--eval."):].split("=", 1)[0].replace("-", "_")
                given.add(name if name in names else name.removeprefix("no_"))  # --eval.no-greedy
        problems = any(a == "--problems" or a.startswith("--problems=") for a in argv)
        return dataclasses.replace(tyro.cli(cls, args=argv), eval_given=tuple(sorted(given & names)),
                                   problems_given=problems)

    def problem_source(self, run: BaseArgs) -> str:
        """This CLI's --problems where given, else the run's (a deepmath run is not re-evaluated on arith)."""
        return self.problems if self.problems_given or self.problems != BaseArgs.problems else run.problems

    def with_run_eval(self, run: BaseArgs) -> EvalConfig:
        """This CLI's eval settings where given, the run's for the rest."""
        default = EvalConfig()
        mine = [f.name for f in dataclasses.fields(EvalConfig)
                if f.name in self.eval_given or getattr(self.eval, f.name) != getattr(default, f.name)]
        return dataclasses.replace(run.eval, **{name: getattr(self.eval, name) for name in mine})

    def write_outputs(self, tool: str, title: str, payload: dict, table: str, note: str) -> Path:
        """Print the table, then write `<tool>.json` and `<tool>.md` into a new `out_dir/<tool>-<time>/`."""
        print(f"\n{table}\n\n- {note}")
        out = Path(self.out_dir) / f"{tool}-{time.strftime('%Y%m%d-%H%M%S')}"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{tool}.json").write_text(json.dumps({"model": self.model, **payload}, indent=2))
        (out / f"{tool}.md").write_text(f"# {title}: {self.model}\n\n{table}\n\n- {note}\n")
        print(f"\noutputs in {out}: {tool}.json, {tool}.md")
        return out


def from_dict(cls, data: dict):
    """An instance of dataclass `cls` from its `asdict` form, nested groups included; keys
    `cls` does not have are ignored (a grpo run's config read as `LearnerArgs`)."""
    hints = typing.get_type_hints(cls)
    kw = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            v = data[f.name]
            kw[f.name] = from_dict(hints[f.name], v) if dataclasses.is_dataclass(hints[f.name]) else v
    return cls(**kw)


def policy_template(policies: dict[str, Policy] | list[Policy]) -> str | None:
    """The prompt template the models share, if they were trained on one (see `Policy.template`)."""
    found = {p.template for p in (policies.values() if isinstance(policies, dict) else policies)}
    return found.pop() if len(found) == 1 else None
