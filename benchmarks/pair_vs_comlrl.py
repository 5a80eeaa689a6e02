"""Two policies trained together: our Agon GRPO step against CoMLRL's MAGRPOTrainer (two agents), interleaved.

    python -m benchmarks.pair_vs_comlrl                          # tiny pair, 4 timed steps per side
    python -m benchmarks.pair_vs_comlrl --model smollm2 --steps 3  # LoRA pair on SmolLM2-135M vs two full copies

CoMLRL lives in its own virtualenv, `.venv-comlrl` at the repository root (it pulls wandb,
openai and datasets, and CoMLRL has no CPU-only torch pin). `make bench-comlrl` builds it and
runs both commands above (about 11 minutes on 2 cores); by hand:

    python3 -m venv .venv-comlrl
    .venv-comlrl/bin/pip install torch==2.13.0          # first: the CPU build on this machine's disk
    .venv-comlrl/bin/pip install comlrl==1.4.3          # also brings transformers, datasets, wandb
    .venv-comlrl/bin/pip install math-verify==0.9.0 gymnasium==1.4.0 pettingzoo==1.27.0 tyro==1.0.17
    echo '*' > .venv-comlrl/.gitignore                  # keep it out of git status

The last install is what `agon_env` (the game's graders, imported from this checkout) and
this file's CLI need there. `--comlrl-python` points at another interpreter.

The work. Each side runs in its own process (`--worker ours` in this interpreter,
`--worker comlrl` in CoMLRL's) and the parent alternates them one optimizer step at a time,
so each pair of steps shares the machine's load; the first step of each is a warm-up and is
left out. Both start from the same two models and train on the bundled arith hard train
problems, step s on the problems our `batch_for_step` draws for it (CoMLRL's dataset is
that order, read unshuffled), each problem with N rollouts per policy (2N per problem),
the same completion limit, temperature (top-p 1, no top-k), and AdamW at a constant lr
with no weight decay, one update per policy per step.
- ours: `baselines.agon_grpo.agon_step`: the drafter samples N drafts, the challenger one
  answer per draft from its summary, `AgonGame.score_round` pays both, each policy takes its
  own GRPO update (clip 0.2, gradient clipping at 1.0, batched scoring); roles swap.
  `--model tiny` is the shipped pair of two full models; any other model is the LoRA pair
  (rank `--lora-rank`) on ONE frozen base.
- CoMLRL: `MAGRPOTrainer(agents=[A, B])`, single turn, aligned joint actions: per problem
  each agent samples N completions with HF `generate` from its own prompt, the reward
  function is called once per joint action (j-th of A, j-th of B), and both agents are
  trained on that one shared return (REINFORCE on the sequence log-prob, advantages
  normalised in the group, one forward/backward per completion). rollout_buffer_size =
  train_batch_size = problems per step gives one AdamW step per agent per step. CoMLRL
  has no LoRA: its agents are full models, so for a one-base model it trains two full
  copies (the base, and B's adapter merged into a copy), exported here before either side
  starts. Its single turn has no channel from one agent's completion to the other's
  prompt, so B reads the same problem prompt as A, not A's summary; the joint reward is
  the pair's total pay in the same game, `AgonGame.score([problem], [A's], [B's])`
  (drafter + challenger reward), graded by the game's own grader.

Measured per step (wall time of the whole optimizer step: generation, grading, update):
seconds, completion tokens (what each side generated, EOS included: ours from its
`Generation`s, CoMLRL's from its `response_lens`) and the time inside generation. The
table gives the median over timed steps; steps/s is 1 / median s/step. Peak memory is each
worker's resident high-water mark, VmHWM in /proc/self/status (Linux): `ru_maxrss` is also
recorded but on Linux it can carry the spawning parent's size over exec. The grader's
worker processes are not counted on either side.

Targets (issue 15): ours >= 1.5x CoMLRL's completion tokens/s, and peak RSS <= 0.6x its.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import tyro

from benchmarks.peak_memory import status_mib

ROOT = Path(__file__).resolve().parent.parent
MARK = "pair_vs_comlrl: "  # prefixes a worker's protocol lines on stdout; any other line is noise
TARGET_SPEED, TARGET_MEMORY = 1.5, 0.6
TINY = ROOT / "baselines" / "policy" / "tiny_pair"


@dataclass
class Args:
    """Our Agon GRPO step vs CoMLRL's MAGRPOTrainer with two agents, stepped alternately in two processes."""

    model: str = "tiny"
    """'tiny' (the shipped pair: two full models on both sides), or one base ('smollm2', a local HF dir):
    ours trains the LoRA pair on it, CoMLRL two full copies"""
    steps: int = 4
    """timed optimizer steps per side, after one warm-up step each"""
    problems_per_step: int = 2
    """problems per optimizer step (CoMLRL's rollout_buffer_size and train_batch_size)"""
    group: int = 4
    """N: rollouts per problem per policy (ours: N drafts, N answers; CoMLRL's num_generations)"""
    max_new_tokens: int = 64
    """completion length limit in tokens, both sides"""
    temperature: float = 0.7
    """sampling temperature (top-p 1, no top-k), both sides"""
    lr: float = 1e-4
    """AdamW learning rate, constant, no weight decay, both sides"""
    lora_rank: int = 16
    """rank of our two adapters on a one-base model (ignored for 'tiny')"""
    micro_batch: int = 1
    """ours: completions per forward/backward of each update (`--micro-batch`; 0: all at once); 1 is
    CoMLRL's own granularity, one completion per forward/backward"""
    seed: int = 0
    """seed of the problem order, the adapters' initialisation and sampling"""
    threads: int = 2
    """torch CPU threads in each worker"""
    comlrl_python: str = ".venv-comlrl/bin/python"
    """the interpreter CoMLRL is installed in (relative to the repository root); see the module docstring"""
    reply_timeout: float = 900.0
    """seconds to wait for any one worker reply (a load or a step) before giving up"""
    results_dir: str = ""
    """where the JSON and markdown go (default: benchmarks/results): pair_vs_comlrl.* for 'tiny',
    pair_vs_comlrl_<model>.* otherwise"""
    worker: str = ""
    """internal: run one side ('ours', 'comlrl' or 'export') in this process, driven over stdin/stdout"""
    spec: str = ""
    """internal: the worker's JSON spec file"""


# ---------------------------------------------------------------- what a worker measures and says
def memory_mib() -> dict[str, float]:
    """This process's resident size now and its high-water mark (VmRSS, VmHWM), and ru_maxrss, in MiB."""
    return {"ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            **{field: status_mib(field) for field in ("VmRSS", "VmHWM")}}


def _send(obj: dict) -> None:
    sys.stdout.write(MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()


def _wait(expected: str) -> None:
    line = sys.stdin.readline().strip()
    if line != expected:
        raise SystemExit(f"worker: expected {expected!r} from the parent, got {line!r}")


def warm_grader(game, problem) -> None:
    """Start the game's grader (its math-verify workers) now, so neither side's first step starts them."""
    game.grade_solo([problem], ["<answer>x + 1</answer>"])


# ---------------------------------------------------------------- ours
class OursSide:
    """`baselines.agon_grpo.agon_step` on the pair, set up as `agon_grpo.main` sets it up, one step per call."""

    def __init__(self, spec: dict):
        import torch

        from baselines import agon_grpo
        from baselines.config import policy_template
        from baselines.policy import load_pair
        from baselines.training import batch_for_step
        from baselines.update import make_optimizer

        self.base_memory = memory_mib()
        b = spec["bench"]
        a = agon_grpo.Args(model=spec["ours_model"], problems_per_step=b["problems_per_step"], group_size=b["group"],
                           lr=b["lr"], lr_schedule="constant", warmup_frac=0.0, optimizer="adamw", beta=0.0,
                           lora_rank=b["lora_rank"], micro_batch=b["micro_batch"], seed=b["seed"],
                           threads=b["threads"], device="cpu",
                           backend="hf", steps=1 + b["steps"], progress=False)
        a.sampling = dataclasses.replace(a.sampling, temperature=b["temperature"], top_p=1.0,
                                         max_new_tokens=b["max_new_tokens"], greedy=False)
        a.validate("group-size", a.group_size)
        a.seed_everything()
        train_set = a.load("train", a.train_tiers)
        pa, pb = load_pair(a.model_spec(), lora_rank=a.lora_rank, device="cpu", seed=a.seed, backend="hf",
                           reference=False)
        game = a.game(train_set[0].domain, policy_template([pa, pb]), a.reward, a.format_weight,
                      length_tiebreak=a.length_tiebreak, summary=a.summary)
        policies, opts, scheds = {"A": pa, "B": pb}, {}, {}
        for k, pol in policies.items():
            opts[k], scheds[k] = make_optimizer(pol, a)
            pol.generate = self._counted(pol.generate)
            pol.token_logprobs = self._scored(pol.token_logprobs)
        self.calls: list[dict] = []
        self.scored = 0
        self.order = [[p.id for p in batch_for_step(train_set, s, a.problems_per_step, a.seed)] for s in range(a.steps)]
        warm_grader(game, train_set[0])
        self.game, self.args, self.torch = game, a, torch
        self.lora = type(pa).__name__ == "LoraPolicy"
        self._step = lambda s: agon_grpo.agon_step(s, a, game, train_set, policies, opts, scheds)
        self.loaded_memory = memory_mib()

    def _counted(self, generate):
        def counted(*pos, **kw):
            t = time.perf_counter()
            groups = generate(*pos, **kw)
            self.calls.append({"seconds": time.perf_counter() - t,
                               "tokens": sum(len(g.completion_ids) for gs in groups for g in gs),
                               "completions": sum(len(gs) for gs in groups),
                               "prompt_tokens": [len(gs[0].prompt_ids) for gs in groups]})
            return groups
        return counted

    def _scored(self, token_logprobs):
        def scored(prompt_ids, completion_ids, **kw):
            self.scored += len(completion_ids)
            return token_logprobs(prompt_ids, completion_ids, **kw)
        return scored

    def ready(self) -> dict:
        g = self.game
        return {"event": "ready", "order": self.order, "lora": self.lora, "memory_base": self.base_memory,
                "memory_loaded": self.loaded_memory,
                "game": {"template": g.template.name, "reward": g.reward, "format_weight": g.format_weight,
                         "length_tiebreak": g.length_tiebreak, "summary": g.summary, "domain": g.domain}}

    def step(self, s: int) -> dict:
        self.calls.clear()
        self.scored = 0
        t = time.perf_counter()
        m = self._step(s)
        secs = time.perf_counter() - t
        tokens = sum(c["tokens"] for c in self.calls)
        n = self.args.problems_per_step * self.args.group_size
        if round((m["length/drafter"] + m["length/challenger"]) * n) != tokens:
            raise RuntimeError(f"our step {s}: counted {tokens} tokens, its metrics say "
                               f"{(m['length/drafter'] + m['length/challenger']) * n}")
        return {"event": "step", "step": s, "seconds": secs, "generate_s": sum(c["seconds"] for c in self.calls),
                "tokens": tokens, "completions": sum(c["completions"] for c in self.calls),
                "problems": self.order[s], "drafter": m["drafter"], "scored": self.scored,
                "prompt_tokens": self.calls[0]["prompt_tokens"],  # the drafter's, one per problem
                "threads": self.torch.get_num_threads()}


def serve_ours(spec: dict) -> None:
    side = OursSide(spec)
    _send(side.ready())
    for s in range(1 + spec["bench"]["steps"]):
        _wait("step")
        _send(side.step(s))
    _wait("done")
    _send({"event": "done", "memory": memory_mib()})


# ---------------------------------------------------------------- the one-base export CoMLRL trains
def serve_export(spec: dict) -> None:
    """Save the base (A's zero adapter merged: the base itself) and B (its initial adapter merged) as HF dirs."""
    from baselines.policy import load_pair

    b = spec["bench"]
    pa, pb = load_pair(spec["model"], lora_rank=b["lora_rank"], device="cpu", seed=b["seed"], backend="hf",
                       reference=False)
    for pol, name in ((pa, "a"), (pb, "b")):
        pol.save_merged(Path(spec["export_dir"]) / name)
    _send({"event": "done"})


# ---------------------------------------------------------------- CoMLRL
def serve_comlrl(spec: dict) -> None:
    """MAGRPOTrainer over the same steps; each step waits for the parent's 'step' before it starts."""
    import random
    from importlib.metadata import version

    import torch
    from comlrl.trainers.reinforce import MAGRPOConfig, MAGRPOTrainer
    from datasets import Dataset
    from transformers.utils import logging as hf_logging

    from agon_env import AgonGame
    from baselines.policy.hf import chat_prompt, load_hf  # the project's loader: the tiny pair's tokenizer needs it
    from problems import load

    base_memory = memory_mib()  # after imports, as ours
    hf_logging.disable_progress_bar()
    b = spec["bench"]
    torch.set_num_threads(b["threads"])
    torch.manual_seed(b["seed"])
    random.seed(b["seed"])
    P, N = b["problems_per_step"], b["group"]
    game = AgonGame(**spec["game"])
    by_id = {p.id: p for p in load("arith", split="train", tier="hard")}
    warm_grader(game, by_id[spec["order"][0][0]])
    loaded = [load_hf(d, "cpu") for d in spec["agent_dirs"]]
    agents, toks = [m for m, _ in loaded], [t for _, t in loaded]
    flat = [by_id[i] for ids in spec["order"] for i in ids]
    prompts = game.drafter_prompts(flat)  # both agents read the problem: one turn has no channel between them
    texts = [chat_prompt(toks[0], t) for t in prompts]  # what our HFPolicy feeds (no system turn)
    pad_note = [distinct_pad(m, t, texts) for m, t in loaded]
    ds = Dataset.from_dict({"prompt": texts, "problem_id": [p.id for p in flat]})
    timers = {"reward_s": 0.0}

    def joint_reward(drafts, answers, *, batch_items):
        """The pair's total pay in the game, for each aligned joint action (CoMLRL passes one at a time)."""
        t = time.perf_counter()
        games = game.score([by_id[batch_items[0]["problem_id"]]] * len(drafts), drafts, answers)
        timers["reward_s"] += time.perf_counter() - t
        return [g.drafter_reward + g.challenger_reward for g in games]

    config = MAGRPOConfig(
        num_train_epochs=1, agent_learning_rate=b["lr"], logging_steps=1, num_agents=2, parallel_training="none",
        agent_devices="cpu", num_generations=N, max_new_tokens=b["max_new_tokens"], temperature=b["temperature"],
        top_p=1.0, top_k=0, num_turns=1, joint_mode="aligned", eval_interval=0, eval_num_samples=0,
        rollout_buffer_size=P, train_batch_size=P, advantage_normalization=True, advantage_mode="mean",
        reference_kl_enabled=False)
    trainer = MAGRPOTrainer(agents=agents, num_agents=2, tokenizer=toks, train_dataset=ds, reward_func=joint_reward,
                            args=config)  # no wandb_config: no wandb run
    trainer.verbose = False  # what config_sections.output.verbose=False sets, without starting wandb: no tqdm bar
    for opt in trainer.optimizers:  # torch's AdamW default is weight_decay=0.01; ours uses 0
        for group in opt.param_groups:
            group["weight_decay"] = 0.0
    settings = {k: getattr(config, k) for k in (
        "num_generations", "num_turns", "joint_mode", "rollout_buffer_size", "train_batch_size", "advantage_mode",
        "advantage_normalization", "reference_kl_enabled", "parallel_training", "top_p", "top_k", "temperature",
        "max_new_tokens", "agent_learning_rate", "eval_interval")}
    settings["weight_decay"] = trainer.optimizers[0].param_groups[0]["weight_decay"]
    settings["pad_token"] = pad_note[0]
    settings["version"] = version("comlrl")
    settings["versions"] = ", ".join(f"{p} {version(p)}" for p in ("comlrl", "torch", "transformers", "datasets"))

    calls: list[dict] = []
    generate = trainer._generate_completions  # called once per agent per problem

    def counted(*pos, **kw):
        t = time.perf_counter()
        out = generate(*pos, **kw)
        calls.append({"seconds": time.perf_counter() - t, "tokens": sum(out["response_lens"]),
                      "completions": len(out["response_lens"]), "agent": kw.get("agent_idx"),
                      "prompt_tokens": int(out["prompt_input_ids"].shape[1]),
                      "trained_tokens": sum(len(c) for c in out["completion_input_ids"][0])})
        return out
    trainer._generate_completions = counted

    # one problem's rollouts; the P-th also updates both agents. The step's window opens at its first
    # problem, after the dataloader handed that one over: fetching one row of an in-memory dataset
    # (not timed; steps take seconds) is left out of CoMLRL's time, the other P - 1 fetches are inside.
    one_problem = trainer._train_step_returns
    state = {"k": 0, "t": 0.0, "ids": []}

    def stepped(batch_item, **kw):
        k = state["k"]
        state["k"] += 1
        if k % P == 0:
            _wait("step")
            calls.clear()
            timers["reward_s"] = 0.0
            state.update(t=time.perf_counter(), ids=[])
        state["ids"].append(batch_item["problem_id"])
        one_problem(batch_item, **kw)
        if k % P == P - 1:
            secs = time.perf_counter() - state["t"]
            _send({"event": "step", "step": k // P, "seconds": secs, "generate_s": sum(c["seconds"] for c in calls),
                   "reward_s": timers["reward_s"], "tokens": sum(c["tokens"] for c in calls),
                   "completions": sum(c["completions"] for c in calls), "problems": state["ids"],
                   "prompt_tokens": [c["prompt_tokens"] for c in calls if c["agent"] == 0],
                   "trained_tokens": sum(c["trained_tokens"] for c in calls), "threads": torch.get_num_threads()})
    trainer._train_step_returns = stepped

    _send({"event": "ready", "memory_base": base_memory, "memory_loaded": memory_mib(), "settings": settings})
    trainer.train()
    _wait("done")
    _send({"event": "done", "memory": memory_mib()})


def distinct_pad(model, tokenizer, prompts: list[str]) -> str:
    """Give CoMLRL a pad token that no prompt contains; returns what was done.

    CoMLRL takes a prompt to end at its first pad token. Where pad is EOS (SmolLM2: <|im_end|>)
    and the chat template puts EOS inside the prompt, it would split the prompt there and
    train on the rest as completion; so pad becomes another special token, in the tokenizer
    and in the generation config (what `generate` pads finished rows with)."""
    ids = {i for text in prompts for i in tokenizer(text)["input_ids"]}
    if tokenizer.pad_token_id not in ids:
        return f"kept {tokenizer.pad_token!r}"
    free = [i for i in tokenizer.all_special_ids if i not in ids and i != tokenizer.eos_token_id]
    if not free:
        raise RuntimeError("every special token of the tokenizer occurs in a prompt; CoMLRL needs a pad token that does not")
    before, tokenizer.pad_token = tokenizer.pad_token, tokenizer.convert_ids_to_tokens(free[0])
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return f"{before!r} (in the prompts) replaced by {tokenizer.pad_token!r}"


# ---------------------------------------------------------------- the parent
class Worker:
    """One side's process: JSON requests on stdin, `MARK` lines back; its stderr goes to `log`."""

    def __init__(self, python: str, role: str, spec: dict, tmp: Path, timeout: float):
        self.role, self.timeout, self.log = role, timeout, tmp / f"{role}.log"
        (tmp / f"{role}.json").write_text(json.dumps(spec))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled",
               "TOKENIZERS_PARALLELISM": "false"}
        self._err = open(self.log, "w")
        self.proc = subprocess.Popen([python, "-m", "benchmarks.pair_vs_comlrl", "--worker", role, "--spec",
                                      str(tmp / f"{role}.json")], cwd=ROOT, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self.lines.put(json.loads(line[len(MARK):]))
        self.lines.put(None)

    def reply(self, request: str | None = None) -> dict:
        if request is not None:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
        try:
            got = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            got = None
        if got is None:
            self.close()
            tail = "".join(self.log.read_text().splitlines(keepends=True)[-25:])
            raise RuntimeError(f"{self.role} worker gave no reply (exit {self.proc.poll()}); its stderr ends:\n{tail}")
        return got

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._err.close()


def comlrl_python(args: Args) -> Path:
    """CoMLRL's interpreter, or a SystemExit that says how to build it."""
    p = Path(args.comlrl_python)
    p = p if p.is_absolute() else ROOT / p
    if not p.exists():
        raise SystemExit(f"error: --comlrl-python {args.comlrl_python!r} does not exist; build CoMLRL's virtualenv "
                         "with the commands in `python -m benchmarks.pair_vs_comlrl --help`'s module docstring "
                         "(python3 -m venv .venv-comlrl; .venv-comlrl/bin/pip install torch==2.13.0; ... comlrl==1.4.3)")
    return p


def run(args: Args) -> dict:
    """Both sides, stepped alternately (ours, then CoMLRL's); their step records, memory and CoMLRL's settings."""
    python = comlrl_python(args)
    bench = {k: getattr(args, k) for k in ("steps", "problems_per_step", "group", "max_new_tokens", "temperature",
                                           "lr", "lora_rank", "micro_batch", "seed", "threads")}
    with tempfile.TemporaryDirectory(prefix="agon_pair_vs_comlrl_") as tmp:
        tmp = Path(tmp)
        if args.model == "tiny":
            ours_model, dirs = "tiny", [str(TINY / "a"), str(TINY / "b")]
        else:  # CoMLRL trains full models: export the base and B's merged start; ours loads the same base
            w = Worker(sys.executable, "export", {"bench": bench, "model": args.model, "export_dir": str(tmp / "export")},
                       tmp, args.reply_timeout)
            w.reply()
            w.close()
            ours_model, dirs = str(tmp / "export" / "a"), [str(tmp / "export" / n) for n in "ab"]
        ours = Worker(sys.executable, "ours", {"bench": bench, "ours_model": ours_model}, tmp, args.reply_timeout)
        theirs = None
        try:
            ready = {"ours": ours.reply()}
            theirs = Worker(str(python), "comlrl", {"bench": bench, "order": ready["ours"]["order"],
                                                    "game": ready["ours"]["game"], "agent_dirs": dirs},
                            tmp, args.reply_timeout)
            ready["comlrl"] = theirs.reply()
            steps = {"ours": [], "comlrl": []}
            for _ in range(1 + args.steps):
                steps["ours"].append(ours.reply("step"))
                steps["comlrl"].append(theirs.reply("step"))
            done = {"ours": ours.reply("done"), "comlrl": theirs.reply("done")}
        finally:
            ours.close()
            if theirs is not None:
                theirs.close()
    memory = {side: {"base": ready[side]["memory_base"]["VmRSS"], "loaded": ready[side]["memory_loaded"]["VmRSS"],
                     "peak": done[side]["memory"]["VmHWM"], "ru_maxrss": done[side]["memory"]["ru_maxrss"]}
              for side in steps}
    return {"steps": steps, "memory": memory, "comlrl_settings": ready["comlrl"]["settings"],
            "lora": ready["ours"]["lora"], "game": ready["ours"]["game"]}


# ---------------------------------------------------------------- the table
def summarize(records: list[dict]) -> dict:
    """Over the timed steps (the warm-up, record 0, left out): median s/step, steps/s, tokens/s, generation share."""
    timed = records[1:]
    s = statistics.median(r["seconds"] for r in timed)
    return {"s_per_step": s, "steps_per_s": 1 / s, "tokens_per_s": statistics.median(r["tokens"] / r["seconds"] for r in timed),
            "generate_share": sum(r["generate_s"] for r in timed) / sum(r["seconds"] for r in timed),
            "tokens_per_step": sum(r["tokens"] for r in timed) / len(timed),
            "completions_per_step": sum(r["completions"] for r in timed) / len(timed)}


def table(summary: dict, memory: dict, labels: dict) -> tuple[list[dict], dict]:
    """The rows (ours, CoMLRL, ours / CoMLRL) and the ratios the targets are judged on."""
    ratio = {"tokens_per_s": summary["ours"]["tokens_per_s"] / summary["comlrl"]["tokens_per_s"],
             "steps_per_s": summary["ours"]["steps_per_s"] / summary["comlrl"]["steps_per_s"],
             "peak_rss": memory["ours"]["peak"] / memory["comlrl"]["peak"]}
    rows = [{"learner": labels[side], "s/step": round(x["s_per_step"], 3), "steps/s": round(x["steps_per_s"], 3),
             "completion tokens/s": round(x["tokens_per_s"], 1), "completion tokens/step": round(x["tokens_per_step"], 1),
             "generation share": round(x["generate_share"], 2), "peak RSS MiB": round(memory[side]["peak"], 1),
             "RSS after imports MiB": round(memory[side]["base"], 1)} for side, x in summary.items()]
    rows.append({"learner": "ours / CoMLRL", "s/step": round(1 / ratio["steps_per_s"], 3),
                 "steps/s": round(ratio["steps_per_s"], 3), "completion tokens/s": round(ratio["tokens_per_s"], 3),
                 "completion tokens/step": "", "generation share": "", "peak RSS MiB": round(ratio["peak_rss"], 3),
                 "RSS after imports MiB": ""})
    return rows, ratio


def report_name(args: Args) -> tuple[str, str]:
    """The results' file stem (one per model, so the tiny and SmolLM2 tables sit side by side) and its command."""
    default = Args()
    options = "".join(f" --{k.replace('_', '-')} {v}" for k, v in dataclasses.asdict(args).items()
                      if k not in ("comlrl_python", "reply_timeout", "results_dir", "worker", "spec")
                      and v != getattr(default, k))
    command = "python -m benchmarks.pair_vs_comlrl" + options
    if args.model == "tiny":
        return "pair_vs_comlrl", command
    return "pair_vs_comlrl_" + "".join(c if c.isalnum() else "_" for c in Path(args.model).name), command


def main(args: Args) -> dict:
    from importlib.metadata import version

    from benchmarks.report import RESULTS, require_at_least, write_report

    require_at_least(args, {"steps": 1, "problems_per_step": 1, "group": 2, "max_new_tokens": 1, "threads": 1})
    t0 = time.perf_counter()
    res = run(args)
    steps, memory, cs = res["steps"], res["memory"], res["comlrl_settings"]
    summary = {side: summarize(steps[side]) for side in ("ours", "comlrl")}
    pair = f"LoRA pair (rank {args.lora_rank}) on one {args.model} base" if res["lora"] else f"{args.model} pair, two full models"
    labels = {"ours": f"baselines.agon_grpo step ({pair})",
              "comlrl": f"comlrl {cs['version']} MAGRPOTrainer (2 full agents)"}
    rows, ratio = table(summary, memory, labels)
    same = [o["problems"] == t["problems"] and o["completions"] == t["completions"] and o["prompt_tokens"] == t["prompt_tokens"]
            for o, t in zip(steps["ours"], steps["comlrl"])]
    speed_met, mem_met = ratio["tokens_per_s"] >= TARGET_SPEED, ratio["peak_rss"] <= TARGET_MEMORY
    load = os.getloadavg()
    timed = steps["comlrl"][1:]
    notes = [
        f"Median over {args.steps} timed steps per side, stepped alternately (ours, then CoMLRL's) after one warm-up "
        f"step each; CPU, {args.threads} torch thread(s) per worker; arith hard train problems, "
        f"{args.problems_per_step} problems × N = {args.group} rollouts per policy per step (2N per problem), "
        f"≤ {args.max_new_tokens} tokens, T = {args.temperature} (top-p 1, no top-k), AdamW lr {args.lr} constant, "
        "no weight decay, one update per policy per step; ours accumulates gradients over "
        f"{args.micro_batch or 'all'} completion(s) per forward/backward (--micro-batch), CoMLRL over one. Ours "
        f"scored {sum(r['scored'] for r in steps['ours'][1:]) / sum(r['completions'] for r in steps['ours'][1:]):.0%} "
        "of its timed steps' completions in the update: the others had advantage exactly 0 (all-equal groups), "
        "whose gradient is exactly 0, so their forward/backward is skipped (baselines/update.py); CoMLRL runs one "
        "on every completion.",
        f"Identical work: same problems, rollouts and drafter-prompt tokens per step on both sides in {sum(same)} of "
        f"{len(same)} steps. Each side samples its own completions, so lengths differ; tokens/s is the fair rate. "
        "Ours also builds and runs the challenger's longer prompts (problem + draft summary); CoMLRL's agent B reads "
        "the problem prompt (its single turn has no channel from A's completion to B's prompt).",
        f"CoMLRL's settings: num_turns={cs['num_turns']}, joint_mode={cs['joint_mode']}, "
        f"num_generations={cs['num_generations']}, rollout_buffer_size={cs['rollout_buffer_size']}, "
        f"train_batch_size={cs['train_batch_size']}, advantage_mode={cs['advantage_mode']}, "
        f"advantage_normalization={cs['advantage_normalization']}, reference KL off, parallel_training="
        f"{cs['parallel_training']}, top_k={cs['top_k']}, eval_interval={cs['eval_interval']}, no wandb, no tqdm, "
        f"AdamW weight_decay set to {cs['weight_decay']} (torch's default 0.01), pad token {cs['pad_token']}; "
        "HF generate, fp32. "
        "Reward: the pair's total pay (drafter + challenger) from agon_env's AgonGame.score, called once per joint "
        f"action; {sum(r['reward_s'] for r in timed) / sum(r['seconds'] for r in timed):.1%} of its step time. "
        f"CoMLRL trains on whole padded completion rows: {sum(r['trained_tokens'] for r in timed) / len(timed):.0f} "
        f"trained tokens per step for {summary['comlrl']['tokens_per_step']:.0f} generated.",
        f"Peak RSS is each worker's VmHWM (its main process; grader workers not counted); "
        f"ru_maxrss: ours {memory['ours']['ru_maxrss']:.0f} MiB, CoMLRL {memory['comlrl']['ru_maxrss']:.0f} MiB. "
        f"After loading: ours {memory['ours']['loaded']:.0f} MiB, CoMLRL {memory['comlrl']['loaded']:.0f} MiB.",
        f"Target ours ≥ {TARGET_SPEED}× CoMLRL's completion tokens/s: {'met' if speed_met else 'not met'} "
        f"({ratio['tokens_per_s']:.2f}×; steps/s {ratio['steps_per_s']:.2f}×). Target peak RSS ≤ {TARGET_MEMORY}× "
        f"CoMLRL's: {'met' if mem_met else 'not met'} ({ratio['peak_rss']:.2f}×).",
        f"Shared machine: load average {load[0]:.1f} at the end of the run on {os.cpu_count()} cores (other jobs may "
        "have been running; alternating the steps gives both sides the same load).",
        f"torch {version('torch')}, transformers {version('transformers')}, peft {version('peft')}; CoMLRL's "
        f"virtualenv: {cs['versions']}.",
    ]
    extra = {"args": {k: v for k, v in dataclasses.asdict(args).items() if k not in ("worker", "spec")},
             "summary": summary, "ratio": ratio, "memory": memory, "targets": {"tokens_per_s": TARGET_SPEED,
             "peak_rss": TARGET_MEMORY}, "targets_met": {"tokens_per_s": speed_met, "peak_rss": mem_met},
             "identical_work_steps": sum(same), "steps": steps, "comlrl_settings": cs, "game": res["game"],
             "lora": res["lora"], "load_average": load, "wall_s": time.perf_counter() - t0}
    name, command = report_name(args)
    write_report(name, f"Two policies trained together: ours vs CoMLRL MAGRPOTrainer ({args.model}, CPU)",
                 rows, notes, extra, out_dir=Path(args.results_dir) if args.results_dir else RESULTS, command=command)
    return extra


def worker_main(args: Args) -> None:
    spec = json.loads(Path(args.spec).read_text())
    serve = {"ours": serve_ours, "comlrl": serve_comlrl, "export": serve_export}.get(args.worker)
    if serve is None:
        raise SystemExit(f"error: --worker must be 'ours', 'comlrl' or 'export', got {args.worker!r}")
    serve(spec)


if __name__ == "__main__":
    cli = tyro.cli(Args)
    worker_main(cli) if cli.worker else main(cli)
