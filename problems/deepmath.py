"""DeepMath-103K in its own schema, and the paper's hard split.

A row has ``question`` (str), ``final_answer`` (str), ``difficulty`` (float), ``topic``
(str) and ``r1_solution_1..3`` (str). Rows come from a local ``.parquet`` file (needs
``pyarrow``), a ``.jsonl`` file, or a directory of them (read in name order). A malformed
row raises ``ValueError`` naming the file, the 1-based line or row, and the field, e.g.
``part-0.jsonl line 17: missing 'final_answer'``.

The paper's hard split is ``difficulty == 8`` with binary answers (yes/no/true/false, after
stripping ``$``, ``\\text{}``, ``\\boxed{}`` and punctuation) removed. `load_deepmath`
then orders the problems by a seeded hash of their normalised question, so the split does
not depend on file order, and takes ``n_test`` held-out (default 300), ``n_validation``
(default 0; carve some to choose the cascade direction without touching test) and
``n_train`` (default 3,000) problems. Repeated questions are kept once.

With the ``datasets`` package and a network, a hub name works in place of a path::

    load_deepmath("zwhe99/DeepMath-103K")   # datasets.load_dataset(name, split="train")

That path is documented, not tested here (no network).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from .generate import normalise
from .record import Problem

HUB_NAME = "zwhe99/DeepMath-103K"
HARD_DIFFICULTY = 8.0
FIELDS = ("question", "final_answer", "difficulty", "topic")
SOLUTION_FIELDS = ("r1_solution_1", "r1_solution_2", "r1_solution_3")
BINARY_ANSWERS = frozenset({"yes", "no", "true", "false"})
SUFFIXES = (".parquet", ".jsonl")
_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|boxed)\s*\{([^{}]*)\}")


def is_binary(answer: str) -> bool:
    """True for yes/no/true/false answers, however they are wrapped."""
    s = _WRAPPER.sub(r"\1", answer)
    return re.sub(r"[\s$.,!{}()]", "", s).lower() in BINARY_ANSWERS


def is_deepmath_path(path: str | Path) -> bool:
    """A parquet file, a directory, or a JSONL file whose first row has DeepMath's 'final_answer'."""
    p = Path(path)
    if p.is_dir() or p.suffix == ".parquet":
        return True
    if p.suffix == ".jsonl" and p.is_file():
        with p.open(encoding="utf-8") as f:
            first = next((line for line in f if line.strip()), "{}")
        try:
            return isinstance(row := json.loads(first), dict) and "final_answer" in row
        except json.JSONDecodeError:
            return False
    return False


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in SUFFIXES)
        if not files:
            raise ValueError(f"{path}: no {' or '.join(SUFFIXES)} files in this directory")
        return files
    if path.suffix not in SUFFIXES:
        raise ValueError(f"{path}: expected a {' or '.join(SUFFIXES)} file or a directory of them")
    return [path]


def _parquet_rows(path: Path, columns: tuple[str, ...] | None) -> Iterator[tuple[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{path.name}: reading parquet needs pyarrow (pip install pyarrow), "
                          "or convert the file to JSONL") from None
    f = pq.ParquetFile(path)
    if columns is not None:  # skip the long r1 solutions unless asked: ~1 GB for the full set
        columns = [c for c in columns if c in f.schema_arrow.names]
    row = 0
    for batch in f.iter_batches(columns=columns):
        for r in batch.to_pylist():
            row += 1
            yield f"{path.name} row {row}", r


def _jsonl_rows(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path.name} line {lineno}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: invalid JSON ({e.msg})") from None


def _hub_rows(name: str) -> Iterator[tuple[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise FileNotFoundError(f"{name!r} is not a local file or directory, and loading it from the hub "
                                "needs the 'datasets' package") from None
    for i, r in enumerate(datasets.load_dataset(name, split="train"), 1):
        yield f"{name} row {i}", r


def iter_rows(path: str | Path, columns: tuple[str, ...] | None = None) -> Iterator[tuple[str, Any]]:
    """(where, raw row) pairs; `where` names the file and line or row for error messages.

    `columns` limits what parquet files read (JSONL lines are parsed whole)."""
    p = Path(path)
    if not p.exists():
        if re.fullmatch(r"[\w.-]+/[\w.-]+", str(path)) and not p.suffix:
            yield from _hub_rows(str(path))
            return
        raise FileNotFoundError(f"DeepMath path {str(path)!r} does not exist")
    for f in _files(p):
        yield from (_parquet_rows(f, columns) if f.suffix == ".parquet" else _jsonl_rows(f))


def parse_row(row: Any, where: str, keep_solutions: bool = False) -> Problem:
    """One DeepMath row as a Problem (no split yet); a bad field raises ValueError naming it."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: a row must be an object, got {type(row).__name__}")
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


def read_deepmath(path: str | Path, keep_solutions: bool = False) -> list[Problem]:
    """Every row, validated, repeated questions kept once, no split assigned."""
    out, seen = [], set()
    columns = FIELDS + (SOLUTION_FIELDS if keep_solutions else ())
    for where, row in iter_rows(path, columns):
        p = parse_row(row, where, keep_solutions)
        if p.id not in seen:
            seen.add(p.id)
            out.append(p)
    return out


def hard_split(problems: list[Problem]) -> list[Problem]:
    """The paper's hard split: difficulty == 8, binary answers removed."""
    return [p for p in problems if p.difficulty == HARD_DIFFICULTY and not is_binary(p.answer)]


def load_deepmath(path: str | Path = HUB_NAME, hard: bool = True, n_train: int | None = 3000, n_test: int = 300,
                  n_validation: int = 0, seed: int = 0, keep_solutions: bool = False) -> list[Problem]:
    """DeepMath problems with a deterministic test / validation / train split.

    Args:
        path: a parquet/JSONL file, a directory of them, or a hub name (needs `datasets`).
        hard: keep only the paper's hard split (see `hard_split`).
        n_train: training problems (None: all the rest); problems beyond it are left out.
        n_test: held-out problems (the paper's 300).
        n_validation: validation problems, drawn after test and before train.
        seed: changes which problems land in which split.
        keep_solutions: keep r1_solution_1..3 in metadata["r1_solutions"] (large).
    """
    problems = read_deepmath(path, keep_solutions)
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
