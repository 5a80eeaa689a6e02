"""reasoning-gym as a problem source (optional: ``pip install agon[reasoning-gym]``).

reasoning-gym generates about 100 task families offline. This adapter only takes their
question and reference answer; grading stays ours (the env's graders), so pick tasks
whose answers math-verify or exact match can judge, e.g. ``basic_arithmetic``,
``chain_sum``, ``fraction_simplification``, ``simple_equations``::

    load("reasoning_gym", task="chain_sum", n=500, seed=1, split_as="test")
    load("reasoning_gym", task="chain_sum", n=5000, seed=2, split_as="train",
         exclude=[p.question for p in test])   # keeps the splits disjoint

Task options (``config``) pass straight to ``reasoning_gym.create_dataset``.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from .generate import normalise
from .record import Problem


def load_reasoning_gym(task: str = "basic_arithmetic", n: int = 1000, seed: int = 0, split_as: str | None = None,
                       difficulty_as: float = 0.0, exclude: Iterable[str] = (), **config: Any) -> list[Problem]:
    """`n` reasoning-gym items of `task` as Problems (fewer if some repeat or are excluded).

    Args:
        task: a reasoning-gym dataset name.
        n: items to generate.
        seed: reasoning-gym's seed; the same seed gives the same items.
        split_as: the split label to give every problem ("train", "validation", "test" or None).
        difficulty_as: the numeric difficulty to record (reasoning-gym has no common scale).
        exclude: questions to drop (compared normalised), e.g. another split's.
        config: task options for `reasoning_gym.create_dataset`.
    """
    try:
        import reasoning_gym
    except ImportError:
        raise ImportError("source 'reasoning_gym' needs the optional package: pip install 'agon[reasoning-gym]' "
                          "(or pip install reasoning-gym)") from None
    seen = {normalise(q) for q in exclude}
    out = []
    for i, item in enumerate(reasoning_gym.create_dataset(task, size=n, seed=seed, **config)):
        if item.get("answer") is None or not str(item["answer"]).strip():
            raise ValueError(f"reasoning_gym task {task!r} item {i}: no reference 'answer'")
        key = normalise(item["question"])
        if key in seen:
            continue
        seen.add(key)
        meta = json.loads(json.dumps(item.get("metadata", {}), default=str))  # JSONL-safe
        out.append(Problem(id=f"rg-{task}-{seed}-{i:05d}", question=item["question"], answer=str(item["answer"]),
                           difficulty=difficulty_as, source=f"reasoning_gym:{task}", split=split_as,
                           metadata={"task": task, "reasoning_gym": meta}))
    return out
