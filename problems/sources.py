"""Where problems come from: one `load` for every source, with split and tier filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from .arith import TIERS
from .deepmath import is_deepmath_path, load_deepmath
from .generate import BUNDLED_PATH
from .record import SPLITS, Problem, read_jsonl


def _arith(skip_bad: bool = False, **kw) -> list[Problem]:
    if kw:
        raise TypeError(f"source 'arith' takes no options, got {sorted(kw)}; use problems.generate_arith for new sets")
    return read_jsonl(BUNDLED_PATH, skip_bad)


def _deepmath(**kw) -> list[Problem]:
    if "path" not in kw:
        raise TypeError("source 'deepmath' needs path= (a local parquet/JSONL file or directory, or a hub name)")
    return load_deepmath(**kw)


def _reasoning_gym(skip_bad: bool = False, **kw) -> list[Problem]:
    from .rgym import load_reasoning_gym

    return load_reasoning_gym(**kw)  # generated, so there are no bad rows to skip


def _code(loader: str, needs_path: bool = True) -> Callable[..., list[Problem]]:
    def load_code(**kw) -> list[Problem]:
        from . import code

        if needs_path and "path" not in kw:
            raise TypeError("this code source needs path= (a local file or directory in its own schema)")
        if not needs_path:  # the bundled set is ours and clean
            kw.pop("skip_bad", None)
        return getattr(code, loader)(**kw)
    return load_code


# name -> (loader, one-line description); `python -m problems list` prints these.
SOURCES: dict[str, tuple[Callable[..., list[Problem]], str]] = {
    "arith": (_arith, "bundled procedural arithmetic, tiers easy/medium/hard (difficulty 1-3), "
                      "splits train/validation/test, worked solutions"),
    "deepmath": (_deepmath, "DeepMath-103K from a local parquet/JSONL file or directory (path=...); "
                            "the paper's hard split by default"),
    "reasoning_gym": (_reasoning_gym, "reasoning-gym task generators (optional extra 'reasoning-gym'; "
                                      "task=..., n=..., seed=...)"),
    "code_easy": (_code("load_code_easy", needs_path=False),
                  "bundled original easy Python problems with stdin and call-based tests"),
    "code_contests": (_code("load_code_contests"), "CodeContests from a local file or directory (path=...)"),
    "apps": (_code("load_apps"), "APPS from a local file or directory (path=...)"),
    "taco": (lambda **kw: _code("load_apps")(source="taco", **kw), "TACO from a local file or directory (path=...)"),
    "livecodebench": (_code("load_livecodebench"), "LiveCodeBench from a local file or directory (path=...)"),
}


def load(name: str, split: str | None = None, difficulty: float | None = None,
         tier: str | Sequence[str] | None = None, skip_bad: bool = False, **options: Any) -> list[Problem]:
    """Problems from a source name (see `SOURCES`), a path to a Problem JSONL file, or a
    DeepMath parquet/JSONL file or directory (same as `load("deepmath", path=...)`).

    `split`, `difficulty` and `tier` (metadata["tier"]: "hard", "medium,hard" or a list;
    None or "all" for every tier) filter the result;
    `options` go to the source, e.g. `load("deepmath", path="deepmath/", split="test")`.
    Bad rows in a file raise one `problems.DataError` listing each (``FILE line N: what was
    wrong``); `skip_bad=True` loads the good rows and warns (`SkippedRows`) how many it left out.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS} or None, got {split!r}")
    tiers = parse_tiers(tier)
    if tiers is not None and name == "arith" and not tiers <= set(TIERS):
        raise ValueError(f"arith tier must be one of {tuple(TIERS)}, got {tier!r}")
    if name in SOURCES:
        problems = SOURCES[name][0](skip_bad=skip_bad, **options)
    elif is_deepmath_path(name):
        problems = _deepmath(path=name, skip_bad=skip_bad, **options)
    elif Path(name).suffix == ".jsonl" and Path(name).is_file():
        if options:
            raise TypeError(f"a JSONL path takes no options, got {sorted(options)}")
        problems = read_jsonl(name, skip_bad)
    else:
        raise ValueError(f"unknown problem source {name!r}: expected one of {sorted(SOURCES)}, an existing .jsonl path, "
                         "or a DeepMath file or directory")
    if tiers is not None and problems and not any("tier" in p.metadata for p in problems):
        raise ValueError(f"{name!r} has no difficulty tiers; load it with tier=None (on the learners' CLI: 'all')")
    if split is not None and problems and all(p.split is None for p in problems):  # else the filter keeps nothing
        raise ValueError(f"{name!r} assigns no splits (every problem has split=None), so split={split!r} would keep "
                         "none; load it with split=None, or stamp one (reasoning_gym: split_as=...; a code loader "
                         "in problems.code: split=...)")
    return [p for p in problems
            if (split is None or p.split == split)
            and (difficulty is None or p.difficulty == difficulty)
            and (tiers is None or p.metadata.get("tier") in tiers)]


def parse_tiers(tier: str | Sequence[str] | None) -> set[str] | None:
    """None for every tier (None or "all"), else the set named by "a,b" or a sequence."""
    if tier is None or tier == "all":
        return None
    names = tier.split(",") if isinstance(tier, str) else tier
    tiers = {t.strip() for t in names if t.strip()}
    if not tiers:  # an empty selection would filter every problem out
        raise ValueError(f"tier {tier!r} names no tier; give one or more (e.g. 'hard' or 'medium,hard'), or None / 'all'")
    return tiers
