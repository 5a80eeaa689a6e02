"""One problem record for every domain, and its JSONL form.

A `Problem` is what the environment plays on: a question with either a reference
answer (math) or tests (code). It knows nothing of games or models.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

from .rows import parse_rows, read_rows

DOMAINS = ("math", "code")
SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Problem:
    """A checkable problem.

    `answer` is the reference for math; `tests` is a list of test-case dicts for code
    (their schema belongs to the code grader). `solution` is an optional worked
    solution in the completion format (`<think>…</think> summary <answer>…</answer>`)
    used to warm-start tiny models.
    """

    id: str
    question: str
    answer: str | None = None
    tests: list[dict[str, Any]] | None = None
    domain: str = "math"
    difficulty: float = 0.0
    source: str = "custom"
    split: str | None = None
    solution: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"Problem.id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.question, str) or not self.question:
            raise ValueError(f"Problem {self.id!r}: question must be a non-empty str")
        if self.domain not in DOMAINS:
            raise ValueError(f"Problem {self.id!r}: domain must be one of {DOMAINS}, got {self.domain!r}")
        if self.domain == "math" and (self.answer is None or str(self.answer).strip() == ""):
            raise ValueError(f"Problem {self.id!r}: a math problem needs a reference 'answer'")
        if self.domain == "code" and not self.tests:
            raise ValueError(f"Problem {self.id!r}: a code problem needs a non-empty 'tests' list")
        # else a bad shape surfaces only at grading (tests) or filtering (metadata), far from its file and line
        if self.tests is not None and not (isinstance(self.tests, list) and all(isinstance(t, dict) for t in self.tests)):
            raise ValueError(f"Problem {self.id!r}: 'tests' must be a list of test-case objects, got {self.tests!r:.80}")
        if not isinstance(self.metadata, dict):
            raise ValueError(f"Problem {self.id!r}: 'metadata' must be an object, got {type(self.metadata).__name__}")
        if self.split is not None and self.split not in SPLITS:
            raise ValueError(f"Problem {self.id!r}: split must be one of {SPLITS} or None, got {self.split!r}")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v != {}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Problem":
        if not isinstance(d, dict):
            raise ValueError(f"a problem record must be a JSON object, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}; expected some of {sorted(known)}")
        for name in ("id", "question"):
            if d.get(name) is None:  # a null id would become the string 'None', shared by every such row
                raise ValueError(f"missing {name!r}")
        kw = dict(d)
        kw["id"] = str(kw["id"])
        if "difficulty" in kw:
            try:
                kw["difficulty"] = float(kw["difficulty"])
            except (TypeError, ValueError):
                raise ValueError(f"'difficulty' must be a number, got {d['difficulty']!r}") from None
        if kw.get("answer") is not None:
            kw["answer"] = str(kw["answer"])
        return cls(**kw)


def write_jsonl(problems: Iterable[Problem], path: str | Path) -> Path:
    """Write problems one JSON object per line; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for p in problems:
            f.write(json.dumps(p.to_dict(), ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


def read_jsonl(path: str | Path, skip_bad: bool = False) -> list[Problem]:
    """Problems from a JSONL file, one object per line. Bad lines raise one `DataError`
    naming each (``FILE line N: what was wrong``); `skip_bad` keeps the good ones and warns."""
    return parse_rows(read_rows(path, (".jsonl",)), lambda where, row: Problem.from_dict(row), str(path), skip_bad)
