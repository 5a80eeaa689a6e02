"""DeepMath-103K in its own schema, and the paper's hard split.

A row has ``question`` (str), ``final_answer`` (str), ``difficulty`` (float), ``topic``
(str) and ``r1_solution_1..3`` (str). Rows come from a local ``.parquet`` file (needs
``pyarrow``), a ``.jsonl`` file, or a directory of them (read in name order). Malformed
rows raise one `problems.rows.DataError` that names each by file, 1-based line or row,
and field, e.g. ``part-0.jsonl line 17: missing 'final_answer'``; ``skip_bad=True``
loads the good rows instead and warns how many were skipped.

The paper's hard split is ``difficulty == 8`` with binary answers (yes/no/true/false, after
stripping ``$``, ``\\text{}``, ``\\boxed{}`` and punctuation) removed. `load_deepmath`
then orders the problems by a seeded hash of their normalised question, so the split does
not depend on file order, and takes ``n_test`` held-out (default 300), ``n_validation``
(default 0; carve some to choose the cascade direction without touching test) and
``n_train`` (default 3,000) problems. Repeated questions are kept once: of copies that
differ, the one with the smallest (answer, difficulty, question, topic), whatever the file order.

With the ``datasets`` package and a network, a hub name works in place of a path::

    load_deepmath("zwhe99/DeepMath-103K")   # datasets.load_dataset(name, split="train")

That path is documented, not tested here (no network).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from .generate import normalise
from .record import Problem
from .rows import parse_rows, read_rows

HUB_NAME = "zwhe99/DeepMath-103K"
HARD_DIFFICULTY = 8.0
FIELDS = ("question", "final_answer", "difficulty", "topic")
SOLUTION_FIELDS = ("r1_solution_1", "r1_solution_2", "r1_solution_3")
BINARY_ANSWERS = frozenset({"yes", "no", "true", "false"})
SUFFIXES = (".parquet", ".jsonl")
_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|boxed)\s*\{([^{}]*)\}")


def is_binary(answer: str) -> bool:
    """True for yes/no/true/false answers, however they are wrapped."""
    s = answer
    while (inner := _WRAPPER.sub(r"\1", s)) != s:  # one pass unwraps only the innermost: \boxed{\text{No}}
        s = inner
    return re.sub(r"[\s$.,!{}()]", "", s).lower() in BINARY_ANSWERS


def is_deepmath_path(path: str | Path) -> bool:
    """A parquet file, a directory, or a JSONL file whose first object row (among its first
    few lines, so one bad line does not hide the schema) has DeepMath's 'final_answer'."""
    p = Path(path)
    if p.is_dir() or p.suffix == ".parquet":
        return True
    if p.suffix == ".jsonl" and p.is_file():
        with p.open(encoding="utf-8", errors="replace") as f:
            for line in itertools.islice(f, 20):
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict):
                    return "final_answer" in row
    return False


def _hub_rows(name: str) -> Iterator[tuple[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise FileNotFoundError(f"{name!r} is not a local file or directory, and loading it from the hub "
                                "needs the 'datasets' package") from None
    for i, r in enumerate(datasets.load_dataset(name, split="train"), 1):
        yield f"{name} row {i}", r


def iter_rows(path: str | Path, columns: tuple[str, ...] | None = None) -> Iterator[tuple[str, Any]]:
    """(where, raw row) pairs (see `problems.rows.read_rows`); `columns` limits parquet reads."""
    p = Path(path)
    if not p.exists():
        if re.fullmatch(r"[\w.-]+/[\w.-]+", str(path)) and not p.suffix:
            yield from _hub_rows(str(path))
            return
        raise FileNotFoundError(f"DeepMath path {str(path)!r} does not exist")
    yield from read_rows(p, SUFFIXES, columns)


def parse_row(row: dict, where: str, keep_solutions: bool = False) -> Problem:
    """One DeepMath row as a Problem (no split yet); a bad field raises ValueError naming it."""
    for name in ("question", "final_answer", "difficulty"):
        if row.get(name) is None:
            raise ValueError(f"{where}: missing {name!r}")
    question, answer = row["question"], row["final_answer"]
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"{where}: 'question' must be a non-empty string, got {question!r}")
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = str(answer)
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError(f"{where}: 'final_answer' must be a non-empty string, got {answer!r}")
    try:
        difficulty = float(row["difficulty"])
    except (TypeError, ValueError):
        raise ValueError(f"{where}: 'difficulty' must be a number, got {row['difficulty']!r}") from None
    if not math.isfinite(difficulty):
        raise ValueError(f"{where}: 'difficulty' must be finite, got {difficulty}")
    topic = row.get("topic")
    if topic is not None and not isinstance(topic, str):
        raise ValueError(f"{where}: 'topic' must be a string, got {type(topic).__name__}")
    metadata: dict[str, Any] = {"origin": where}
    if topic:
        metadata["topic"] = topic
    if keep_solutions:
        metadata["r1_solutions"] = [row[k] for k in SOLUTION_FIELDS if row.get(k)]
    qid = hashlib.sha1(normalise(question).encode()).hexdigest()[:12]
    return Problem(id=f"deepmath-{qid}", question=question, answer=answer.strip(), difficulty=difficulty,
                   source="deepmath", metadata=metadata)


def read_deepmath(path: str | Path, keep_solutions: bool = False, skip_bad: bool = False) -> list[Problem]:
    """Every row, validated, repeated questions kept once (see the module docstring), no split assigned. Bad rows raise
    one `DataError` naming each; `skip_bad` keeps the good ones and warns how many it skipped."""
    columns = FIELDS + (SOLUTION_FIELDS if keep_solutions else ())
    rows = parse_rows(iter_rows(path, columns), lambda where, row: parse_row(row, where, keep_solutions),
                      str(path), skip_bad)
    unique: dict[str, Problem] = {}
    for p in rows:  # of copies that differ (answer, difficulty), the one kept must not depend on file order
        q = unique.get(p.id)
        if q is None or _copy_key(p) < _copy_key(q):
            unique[p.id] = p
    return list(unique.values())


def _copy_key(p: Problem) -> tuple:
    return p.answer, p.difficulty, p.question, p.metadata.get("topic") or ""


def hard_split(problems: list[Problem]) -> list[Problem]:
    """The paper's hard split: difficulty == 8, binary answers removed."""
    return [p for p in problems if p.difficulty == HARD_DIFFICULTY and not is_binary(p.answer)]


def load_deepmath(path: str | Path = HUB_NAME, hard: bool = True, n_train: int | None = 3000, n_test: int = 300,
                  n_validation: int = 0, seed: int = 0, keep_solutions: bool = False,
                  skip_bad: bool = False) -> list[Problem]:
    """DeepMath problems with a deterministic test / validation / train split.

    Args:
        path: a parquet/JSONL file, a directory of them, or a hub name (needs `datasets`).
        hard: keep only the paper's hard split (see `hard_split`).
        n_train: training problems (None: all the rest); problems beyond it are left out.
        n_test: held-out problems (the paper's 300).
        n_validation: validation problems, drawn after test and before train.
        seed: changes which problems land in which split.
        keep_solutions: keep r1_solution_1..3 in metadata["r1_solutions"] (large).
        skip_bad: load the good rows of a file with bad ones (a `SkippedRows` warning
            counts them) instead of raising `DataError`.
    """
    counts = {"n_test": n_test, "n_validation": n_validation, **({} if n_train is None else {"n_train": n_train})}
    for name, n in counts.items():  # a negative count slices from the end: splits that overlap
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be a non-negative int, got {n!r}")
    problems = read_deepmath(path, keep_solutions, skip_bad)
    if hard:
        problems = hard_split(problems)
    if n_test + n_validation > len(problems):
        raise ValueError(f"{path}: {len(problems)} {'hard ' if hard else ''}problems, fewer than "
                         f"n_test + n_validation = {n_test + n_validation}")
    problems.sort(key=lambda p: hashlib.sha1(f"{seed}:{p.id}".encode()).hexdigest())
    n_train = len(problems) if n_train is None else n_train
    cuts = (("test", n_test), ("validation", n_validation), ("train", n_train))
    out, start = [], 0
    for split, n in cuts:
        out += [replace(p, split=split) for p in problems[start:start + n]]
        start += n
    return out
