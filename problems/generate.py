"""Generate the procedural `arith` set, and rebuild the bundled file.

`generate_arith` is deterministic by seed. Held-out splits are drawn first (test, then
validation, then train), so asking for more training problems never changes them, and a
question (normalised: whitespace dropped, lower case) is used at most once across all
splits and anything passed in `exclude`.
`python -m problems build` rewrites the bundled file from `BUNDLED_SIZES` and seed 0.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Iterable, Mapping

from .arith import SAMPLERS, TIERS, leaks, work
from .record import SPLITS, Problem

BUNDLED_PATH = Path(__file__).parent / "data" / "arith.jsonl"
BUNDLED_SEED = 0
BUNDLED_SIZES = {"test": 600, "validation": 400, "train": 2000}  # per tier
SPLIT_ORDER = ("test", "validation", "train")
MAX_QUESTION_CHARS = 40
MAX_SOLUTION_CHARS = 120
_MAX_DRAWS = 200  # fresh-question attempts per slot before the family counts as exhausted


def normalise(question: str) -> str:
    """The text two questions are compared on for dedupe."""
    return re.sub(r"\s+", "", question).lower()


def _sizes(n_per_tier: int | Mapping[str, int]) -> dict[str | None, int]:
    if isinstance(n_per_tier, int):
        return {None: n_per_tier}
    bad = set(n_per_tier) - set(SPLITS)
    if bad:
        raise ValueError(f"n_per_tier keys must be splits {SPLITS}, got {sorted(bad)}")
    return {s: n_per_tier[s] for s in SPLIT_ORDER if n_per_tier.get(s)}


def generate_arith(
    n_per_tier: int | Mapping[str, int] = BUNDLED_SIZES,
    seed: int = BUNDLED_SEED,
    tiers: Iterable[str] = tuple(TIERS),
    exclude: Iterable[str] = (),
) -> list[Problem]:
    """Problems for each tier, families in equal shares, each with a worked `solution`.

    Args:
        n_per_tier: problems per tier: a dict split -> count (the bundled set uses
            `BUNDLED_SIZES`), or an int for one pool with `split=None` (e.g. extra
            training data: pass the held-out questions as `exclude`).
        seed: the random seed; the same seed gives the same problems.
        tiers: which of "easy", "medium", "hard".
        exclude: questions never to emit (compared normalised).
    """
    sizes = _sizes(n_per_tier)
    seen = {normalise(q) for q in exclude}
    out: list[Problem] = []
    for tier in tiers:
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {tuple(TIERS)}, got {tier!r}")
        difficulty, families = TIERS[tier]
        rng = random.Random(f"arith:{seed}:{tier}")
        slot = 0
        for split, n in sizes.items():
            for i in range(n):
                family = families[slot % len(families)]
                slot += 1
                w = _fresh(family, rng, seen)
                out.append(Problem(
                    id=f"arith-{seed}-{tier}-{split or 'pool'}-{i:05d}", question=w.question, answer=w.answer,
                    difficulty=float(difficulty), source="arith", split=split, solution=w.solution,
                    metadata={"tier": tier, "family": family},
                ))
    return out


def _fresh(family: str, rng: random.Random, seen: set[str]):
    for _ in range(_MAX_DRAWS):
        w = work(family, SAMPLERS[family](rng))
        key = normalise(w.question)
        if key in seen or leaks(w):
            continue
        if len(w.question) > MAX_QUESTION_CHARS or len(w.solution) > MAX_SOLUTION_CHARS:
            raise AssertionError(f"{family} instance over the length budget: {w.question!r} -> {w.solution!r}")
        seen.add(key)
        return w
    raise ValueError(f"family {family!r} is exhausted: no new question in {_MAX_DRAWS} draws; ask for fewer problems")
