"""Warm-start and measure the tiny pair: `python -m baselines.policy.tiny_build build` / `eval`.

Build, per candidate seed (one model per seed, its own init and data order):
1. drafter phase: supervised on the arith train split's worked solutions, in the compact
   drafter format `Q:{question}\\nA:` → solution;
2. the model samples its OWN drafts on the train problems, one per temperature in
   `draft_temperatures` (low: mostly right, so the challenger learns to build on a right
   summary; high: often wrong, so it learns not to trust one), which `AgonGame.summarize`
   turns into what a challenger reads;
3. mixed phase: `challenger_frac` of each batch is challenger examples
   `D:{summary}\\nQ:{question}\\nA:` → the worked solution, the rest drafter examples.
   Without this a model never learns to use the summary and the challenger earns no
   reward (an early prototype's reader scored 0-0.3% all run).
Then every candidate is measured alone (greedy, validation split), the pair with the
smallest hard-tier gap is kept (ties: higher mean), its cascades are measured, and both
models, the tokenizer and `metrics.json` are written. Seed variance is large, so the pair
is chosen by measurement, never by seed alone. Everything is seeded and runs on a fixed
thread count, so the same config rebuilds the same bytes (`--check` compares hashes).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from agon_env.game import AgonGame
from agon_env.rules import game_rates

from .base import SamplingParams
from .hf import HFPolicy
from .tiny import PAIR_DIR, TinyConfig, build_tokenizer, new_model

TIERS = ("easy", "medium", "hard")
@functools.cache
def game() -> AgonGame:
    """The prompts, summary channel and grader the pair is trained and measured on."""
    return AgonGame(template="compact")


@dataclass
class BuildConfig:
    """How the tiny pair is warm-started and selected."""

    out: str = str(PAIR_DIR)
    """directory the pair is written to (a/, b/, metrics.json)"""
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    """candidate seeds; the pair is the two closest on the hard tier"""
    model: TinyConfig = field(default_factory=TinyConfig)
    """model shape"""
    drafter_steps: int = 600
    """optimizer steps on drafter examples only"""
    mixed_steps: int = 600
    """optimizer steps on the drafter/challenger mix"""
    batch_size: int = 32
    """sequences per optimizer step"""
    lr: float = 2e-3
    """peak learning rate (AdamW, warmup then cosine decay to 10% over both phases)"""
    warmup: int = 50
    """warmup steps"""
    challenger_frac: float = 0.55
    """share of challenger examples in each mixed-phase batch"""
    draft_temperatures: list[float] = field(default_factory=lambda: [0.5, 1.0])
    """one own draft per temperature per problem: low ones are mostly right, high ones often wrong"""
    train_per_tier: int = 2000
    """train problems per tier used (the bundled split has 2000)"""
    eval_split: str = "validation"
    """split the pair is selected on"""
    eval_per_tier: int = 400
    """problems per tier in the selection eval"""
    max_hard_gap: float = 0.10
    """the pair's hard-tier accuracies must be this close"""
    threads: int = 1
    """torch threads per candidate (fixed: the bytes of the result depend on it)"""
    workers: int = 2
    """candidates trained in parallel processes (does not change the result)"""
    drafts_per_tier: int = 1000
    """train problems per tier the model drafts on for challenger examples"""
    max_new_tokens: int = 128
    """completion limit for drafts and eval"""
    test_per_tier: int = 600
    """test problems per tier measured for the report (0: skip)"""
    probe_per_tier: int = 4
    """test problems per tier whose greedy texts are stored, for the shipped-pair test"""
    check: bool = False
    """rebuild into a temporary dir and compare weight hashes with the pair in `out` (which is kept)"""


# ---------------------------------------------------------------- data
def _enc(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def drafter_examples(problems, tok) -> list[tuple[list[int], list[int]]]:
    return [(_enc(tok, game().template.drafter_prompt(p.question)), _enc(tok, p.solution) + [tok.eos_token_id])
            for p in problems]


def challenger_examples(problems, drafts: list[str], tok):
    return [(_enc(tok, game().challenger_prompts([p], [d])[0]), _enc(tok, p.solution) + [tok.eos_token_id])
            for p, d in zip(problems, drafts)]


def _batch(examples, pad: int):
    L = max(len(p) + len(c) for p, c in examples)
    ids = torch.full((len(examples), L), pad, dtype=torch.long)
    labels = torch.full((len(examples), L), -100, dtype=torch.long)
    mask = torch.zeros((len(examples), L), dtype=torch.long)
    for i, (p, c) in enumerate(examples):
        seq = torch.tensor(p + c)
        ids[i, :len(seq)], mask[i, :len(seq)] = seq, 1
        labels[i, len(p):len(seq)] = torch.tensor(c)
    return ids, mask, labels


# ---------------------------------------------------------------- training
def _lr(step: int, cfg: BuildConfig) -> float:
    total = cfg.drafter_steps + cfg.mixed_steps
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, total - cfg.warmup)
    return cfg.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * t)))


def _train(model, opt, pools, weights, steps: range, cfg: BuildConfig, gen: torch.Generator, pad: int,
           log=print) -> float:
    """`steps` optimizer steps; each batch draws round(w·batch) examples from each pool."""
    model.train()
    counts = [round(w * cfg.batch_size) for w in weights]
    counts[0] = cfg.batch_size - sum(counts[1:])
    loss = torch.tensor(float("nan"))
    t0 = time.time()
    for step in steps:
        batch = [pool[i] for pool, k in zip(pools, counts) for i in torch.randint(len(pool), (k,), generator=gen).tolist()]
        ids, mask, labels = _batch(batch, pad)
        for g in opt.param_groups:
            g["lr"] = _lr(step, cfg)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (step + 1) % 100 == 0:
            log(f"    step {step + 1}: loss {loss.item():.3f} ({time.time() - t0:.0f}s)")
    return loss.item()


def train_one(seed: int, cfg: BuildConfig, train, tok, log=print):
    """One candidate: drafter phase, own drafts, mixed phase."""
    model = new_model(cfg.model, tok, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=0.01)
    gen = torch.Generator().manual_seed(1000 + seed)
    d_ex = drafter_examples(train, tok)
    t0 = time.time()
    loss = _train(model, opt, [d_ex], [1.0], range(cfg.drafter_steps), cfg, gen, tok.pad_token_id, log)
    log(f"  seed {seed}: drafter phase {cfg.drafter_steps} steps, loss {loss:.3f} ({time.time() - t0:.0f}s)")
    pol = HFPolicy(model, tok, f"seed{seed}")
    per = len(train) // len(TIERS)  # train is tier-major; draft on the first drafts_per_tier of each
    dprobs = [p for k in range(len(TIERS)) for p in train[k * per:k * per + cfg.drafts_per_tier]]
    drafts, dp = [], []
    for k, temp in enumerate(cfg.draft_temperatures):
        gens = pol.generate([game().template.drafter_prompt(p.question) for p in dprobs],
                            params=SamplingParams(temperature=temp, max_new_tokens=cfg.max_new_tokens),
                            seed=2000 + 100 * k + seed)
        drafts += [g[0].text for g in gens]
        dp += dprobs
    c_ex = challenger_examples(dp, drafts, tok)
    right = sum(r.drafter_info["correct"] for r in _grade(dp, drafts, drafts))
    log(f"  seed {seed}: {len(drafts)} own drafts sampled at T={cfg.draft_temperatures}, {right / len(drafts):.0%} right")
    loss = _train(model, opt, [d_ex, c_ex], [1 - cfg.challenger_frac, cfg.challenger_frac],
                  range(cfg.drafter_steps, cfg.drafter_steps + cfg.mixed_steps), cfg, gen, tok.pad_token_id, log)
    log(f"  seed {seed}: mixed phase {cfg.mixed_steps} steps, loss {loss:.3f} ({time.time() - t0:.0f}s total)")
    return model.eval()


# ---------------------------------------------------------------- measuring
def _grade(problems, drafts, responses):
    return game().score(problems, drafts, responses)


def _greedy(pol: HFPolicy, prompts: list[str], max_new_tokens: int) -> list[str]:
    gens = pol.generate(prompts, params=SamplingParams(greedy=True, max_new_tokens=max_new_tokens))
    return [g[0].text for g in gens]


def solo_accuracy(pol, problems, max_new_tokens=128) -> tuple[float, list[str]]:
    drafts = _greedy(pol, game().drafter_prompts(problems), max_new_tokens)
    res = _grade(problems, drafts, drafts)
    return sum(r.drafter_info["correct"] for r in res) / len(problems), drafts


def cascade_accuracy(challenger, problems, drafts, max_new_tokens=128) -> dict:
    """Greedy challenger answers after each draft's summary: accuracy, conversion and keep rates."""
    answers = _greedy(challenger, game().challenger_prompts(problems, drafts),
                      max_new_tokens)
    rates = game_rates(_grade(problems, drafts, answers))
    return {"accuracy": rates["challenger_pass"], "conversion": rates["conversion"], "keep": rates["keep"]}


def measure_pair(a: HFPolicy, b: HFPolicy, by_tier: dict, max_new_tokens=128) -> dict:
    """Per tier: A and B alone, and both cascades (A drafts → B answers, and B → A)."""
    out = {}
    for tier, probs in by_tier.items():
        acc_a, drafts_a = solo_accuracy(a, probs, max_new_tokens)
        acc_b, drafts_b = solo_accuracy(b, probs, max_new_tokens)
        out[tier] = {"n": len(probs), "A": acc_a, "B": acc_b,
                     "A>B": cascade_accuracy(b, probs, drafts_a, max_new_tokens),
                     "B>A": cascade_accuracy(a, probs, drafts_b, max_new_tokens)}
    return out


def probe(a, b, by_tier: dict, max_new_tokens=128) -> dict:
    """Greedy texts of A, B and the A>B cascade on a few problems: a fingerprint of the pair."""
    out = {}
    for tier, probs in by_tier.items():
        da, db = (_greedy(p, game().drafter_prompts(probs), max_new_tokens) for p in (a, b))
        ab = _greedy(b, game().challenger_prompts(probs, da), max_new_tokens)
        out[tier] = [{"id": q.id, "A": x, "B": y, "A>B": z} for q, x, y, z in zip(probs, da, db, ab)]
    return out


def checks(m: dict, max_hard_gap: float) -> dict[str, bool]:
    """The shipping conditions of issue 4 on one measurement. The cascade condition is the
    issue's direction, A drafts and B answers; B→A is measured and reported, not required."""
    h, e = m["hard"], m["easy"]
    out = {
        "hard_gap_within_limit": abs(h["A"] - h["B"]) <= max_hard_gap,
        "hard_above_zero": min(h["A"], h["B"]) > 0.02,
        "hard_well_below_easy": max(h["A"], h["B"]) < min(e["A"], e["B"]) - 0.2,
    }
    for tier in ("medium", "hard"):
        t = m[tier]
        out[f"cascade_A>B_at_least_each_alone_{tier}"] = t["A>B"]["accuracy"] >= max(t["A"], t["B"])
    return out


def load_tiers(split: str, per_tier: int) -> dict:
    import problems

    return {t: problems.load("arith", split=split, tier=t)[:per_tier] for t in TIERS}


def file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------- the build
def _candidate(seed: int, cfg: BuildConfig) -> tuple[dict, list[str]]:
    """Train one candidate in a worker process: (state dict, log lines). Single-threaded and
    deterministic, so parallel and sequential builds give the same bytes."""
    torch.set_num_threads(cfg.threads)
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    lines: list[str] = []

    def log(msg):
        lines.append(msg)
        print(msg, flush=True)

    tok = build_tokenizer()
    train = [p for tier in TIERS for p in load_tiers("train", cfg.train_per_tier)[tier]]
    try:
        return train_one(seed, cfg, train, tok, log).state_dict(), lines
    finally:
        torch.use_deterministic_algorithms(was_deterministic)


def build(cfg: BuildConfig, log=print) -> dict:
    if cfg.check:
        import dataclasses
        import tempfile

        want = json.loads((Path(cfg.out) / "metrics.json").read_text())["sha256"]
        with tempfile.TemporaryDirectory() as tmp:
            got = build(dataclasses.replace(cfg, out=tmp, check=False), log)
        same = got["sha256"] == want
        log(f"rebuild {'matches' if same else 'DIFFERS FROM'} {cfg.out}: {got['sha256']} vs {want}")
        if not same:
            raise SystemExit(1)
        return got
    if len(cfg.seeds) < 2:
        raise ValueError(f"build needs at least two candidate seeds, got {cfg.seeds}")
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    torch.set_num_threads(cfg.threads)
    t0 = time.time()
    tok = build_tokenizer()
    held = load_tiers(cfg.eval_split, cfg.eval_per_tier)
    if cfg.workers <= 1:
        states = [_candidate(s, cfg) for s in cfg.seeds]
    else:
        with ProcessPoolExecutor(min(cfg.workers, len(cfg.seeds)), mp_context=mp.get_context("spawn")) as ex:
            states = list(ex.map(_candidate, cfg.seeds, [cfg] * len(cfg.seeds)))
    cands = {}
    for seed, (state, _) in zip(cfg.seeds, states):
        model = new_model(cfg.model, tok, seed)
        model.load_state_dict(state)
        pol = HFPolicy(model.eval(), tok, f"seed{seed}")
        acc = {t: solo_accuracy(pol, ps, cfg.max_new_tokens)[0] for t, ps in held.items()}
        log(f"  seed {seed}: " + " ".join(f"{t} {a:.1%}" for t, a in acc.items()))
        cands[seed] = (pol, acc)
    pairs = [(i, j) for i in cfg.seeds for j in cfg.seeds if i < j]
    sa, sb = min(pairs, key=lambda p: (abs(cands[p[0]][1]["hard"] - cands[p[1]][1]["hard"]) > cfg.max_hard_gap,
                                       -sum(cands[p[0]][1].values()) - sum(cands[p[1]][1].values())))
    a, b = cands[sa][0], cands[sb][0]
    metrics = measure_pair(a, b, held, cfg.max_new_tokens)
    test = measure_pair(a, b, load_tiers("test", cfg.test_per_tier), cfg.max_new_tokens) if cfg.test_per_tier else None
    out = Path(cfg.out)
    for name, pol in (("a", a), ("b", b)):
        pol.save(out / name)
    result = {
        "config": asdict(cfg), "seeds": {"A": sa, "B": sb}, "build_seconds": round(time.time() - t0, 1),
        "candidates": {str(s): acc for s, (_, acc) in cands.items()},
        cfg.eval_split: metrics, "checks": checks(metrics, cfg.max_hard_gap),
        "test": test, "test_checks": test and checks(test, cfg.max_hard_gap),
        "probe": probe(a, b, load_tiers("test", cfg.probe_per_tier), cfg.max_new_tokens),
        "sha256": {n: file_hash(out / n / "model.safetensors") for n in ("a", "b")},
    }
    (out / "metrics.json").write_text(json.dumps(result, indent=1) + "\n")
    log(f"pair: A = seed {sa}, B = seed {sb}; wrote {out}/a, {out}/b, {out}/metrics.json "
        f"({result['build_seconds']:.0f}s)")
    for name, ok in result["checks"].items():
        log(f"  {'ok  ' if ok else 'FAIL'} {name}")
    return result


@dataclass
class PairEvalArgs:
    """Per-tier greedy accuracy of the shipped (or any built) pair, alone and as cascades."""

    pair: str = str(PAIR_DIR)
    """directory holding a/ and b/"""
    split: str = "test"
    """problem split"""
    per_tier: int = 600
    """problems per tier"""
    threads: int = 1
    """torch threads"""


def evaluate(cfg: PairEvalArgs, log=print) -> dict:
    from .tiny import load_tiny

    torch.set_num_threads(cfg.threads)
    a, b = (HFPolicy(*load_tiny(w, cfg.pair), name=w.upper()) for w in "ab")
    m = measure_pair(a, b, load_tiers(cfg.split, cfg.per_tier))
    log(f"tiny pair {cfg.pair}, split {cfg.split}, greedy, one rollout per stage")
    log(f"{'tier':8}{'n':>5}{'A':>8}{'B':>8}{'A>B':>8}{'B>A':>8}   conversion/keep A>B, B>A")
    for tier, t in m.items():
        log(f"{tier:8}{t['n']:>5}{t['A']:>8.1%}{t['B']:>8.1%}{t['A>B']['accuracy']:>8.1%}{t['B>A']['accuracy']:>8.1%}"
            f"   {t['A>B']['conversion']:.0%}/{t['A>B']['keep']:.0%}, {t['B>A']['conversion']:.0%}/{t['B>A']['keep']:.0%}")
    return m


def main(argv: list[str]) -> None:
    import tyro

    cmds = {"build": (BuildConfig, build), "eval": (PairEvalArgs, evaluate)}
    if not argv or argv[0] not in cmds:
        raise SystemExit(f"usage: python -m baselines.policy.tiny_build {{{'|'.join(cmds)}}} [--help]")
    cls, fn = cmds[argv[0]]
    fn(tyro.cli(cls, args=argv[1:], description=__doc__))


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
