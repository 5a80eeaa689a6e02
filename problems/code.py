"""Code problems: CodeContests, APPS/TACO and LiveCodeBench from local files, and a bundled easy set.

Every loader returns `Problem`s with ``domain="code"`` and ``tests`` in the sandbox's
schema (`agon_env.sandbox`): stdin/stdout ``{"input": str, "output": str}`` or call-based
``{"fn_name": str, "args": list, "expected": any}``. ``metadata["time_limit"]`` holds the
source's time limit in seconds when it has one (the code grader can use it).

Files: ``.jsonl`` (one row per line), ``.json`` (a list of rows), ``.parquet`` (needs
``pyarrow``), or a directory of them (read in name order). Malformed rows raise one
`problems.rows.DataError` naming each by file, row and field, e.g.
``train-00000.parquet row 12: 'public_tests' must have equal input and output lists``;
``skip_bad=True`` loads the good rows instead and warns how many were skipped.

Splits come from file names, as the datasets ship them: a file named for a split
(``train-00000-of-00039.parquet``, ``valid-*``, ``validation*``, ``test.jsonl``,
``test5.jsonl``) gives its rows that split (``valid`` is ``"validation"``). With
``split=...`` only the files of that split are read, and rows of a file named for none are
stamped with it; without it they keep ``split=None``. So a directory holding every shard
loads one split at a time, and ``problems.load("code_contests", path=DIR, split="test")``
filters by it.

- **CodeContests** (deepmind/code_contests): ``name``, ``description``,
  ``public_tests`` / ``private_tests`` / ``generated_tests`` as ``{"input": [...],
  "output": [...]}``, ``difficulty`` (the dataset's enum, `CC_DIFFICULTIES`; stored as
  ``difficulty`` and ``metadata["difficulty_name"]``), ``time_limit`` (``{"seconds",
  "nanos"}``) and ``memory_limit_bytes``. Tests are public, then private, then generated;
  ``metadata["n_public"]`` says how many are public.
- **APPS / TACO**: ``question``, ``input_output`` (a JSON string ``{"inputs", "outputs",
  "fn_name"?}``), ``difficulty`` (a word), ``starter_code``; TACO adds ``time_limit`` such
  as ``"2 seconds"``. With ``fn_name`` the tests are call-based: ``inputs[i]`` is the
  argument list and ``outputs[i]`` the expected value (often wrapped in a one-element
  list, which the sandbox accepts). Rows without tests are skipped. Ids are ``apps/<problem_id>``;
  a row with no id column (TACO) is named by its file and row, ``taco/train:12``.
- **LiveCodeBench** (code_generation_lite): ``question_content``, ``public_test_cases``
  and ``private_test_cases`` (JSON, the latter possibly base64 + zlib + pickle of a JSON
  string; unpickled with no globals allowed), ``metadata`` (JSON with ``func_name``),
  ``difficulty``. A ``functional`` test's input is one JSON value per line (the arguments)
  and its output one JSON value; ``stdin`` tests are plain text.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import re
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable

from .record import Problem, read_jsonl
from .rows import find_files, parse_rows, read_rows

BUNDLED_CODE_EASY = Path(__file__).parent / "data" / "code_easy.jsonl"
SUFFIXES = (".jsonl", ".json", ".parquet")
CC_DIFFICULTIES = ("UNKNOWN_DIFFICULTY", "EASY", "MEDIUM", "HARD", "HARDER", "HARDEST", "EXTERNAL",
                   *"ABCDEFGHIJKLMNOPQRSTUV")  # 7 = Codeforces "A", 8 = "B", ...


def load_code_easy(split: str | None = None) -> list[Problem]:
    """The bundled set of small original problems (stdin and call-based), each with tests
    and a worked solution in the completion format."""
    return [p for p in read_jsonl(BUNDLED_CODE_EASY) if split is None or p.split == split]


# ---------------------------------------------------------------- shared helpers
def _need(row: dict, key: str, where: str) -> Any:
    if row.get(key) in (None, ""):
        raise ValueError(f"{where}: missing {key!r}")
    return row[key]


def _text(v: Any) -> str:
    """APPS/TACO sometimes store an input or output as a list of lines."""
    return "\n".join(map(str, v)) + "\n" if isinstance(v, list) else str(v)


_FILE_SPLIT = re.compile(r"(train|validation|valid|test)(?=$|[-_.\d])")


def file_split(f: Path) -> str | None:
    """The split a shard's name gives it (see the module docstring), or None."""
    m = _FILE_SPLIT.match(f.name.lower())
    return None if m is None else {"valid": "validation"}.get(m.group(1), m.group(1))


def _collect(path, make: Callable[[str, dict], Problem | None], keep: Callable[[str, dict], bool],
             split: str | None, limit: int | None, skip_bad: bool) -> list[Problem]:
    files = [(f, file_split(f) or split) for f in find_files(path, SUFFIXES)]
    if split is not None and not any(s == split for _, s in files):
        raise ValueError(f"{path}: no file of split {split!r}: its files are named for "
                         f"{sorted({s for _, s in files})} (a file's name gives its split; see problems.code)")
    files = [(f, s) for f, s in files if split is None or s == split]  # another split's shards are not read
    current: dict = {}

    def rows():
        for f, s in files:
            current["split"] = s
            yield from read_rows(f, SUFFIXES)

    def parse(where: str, row: dict) -> Problem | None:
        p = make(where, row) if keep(where, row) else None
        return replace(p, split=current["split"]) if p is not None and current["split"] else p

    return parse_rows(rows(), parse, str(path), skip_bad, limit)


def _word_filter(difficulties: Iterable[str] | None) -> Callable[[str, dict], bool]:
    keep = None if difficulties is None else {d.lower() for d in difficulties}
    return lambda where, row: keep is None or str(row.get("difficulty", "")).lower() in keep


# ---------------------------------------------------------------- CodeContests
def _cc_difficulty(row: dict, where: str) -> int:
    try:
        return int(row.get("difficulty") or 0)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: 'difficulty' must be the CodeContests enum (an int), "
                         f"got {row['difficulty']!r}") from None


def code_contests_problem(row: dict, where: str, max_tests: int | None = None) -> Problem:
    tests, n_public = [], 0
    for kind in ("public_tests", "private_tests", "generated_tests"):
        t = row.get(kind) or {"input": [], "output": []}
        ins, outs = t.get("input") or [], t.get("output") or []
        if len(ins) != len(outs):
            raise ValueError(f"{where}: {kind!r} must have equal input and output lists, got {len(ins)} and {len(outs)}")
        tests += [{"input": i, "output": o} for i, o in zip(ins, outs)]
        n_public += len(ins) if kind == "public_tests" else 0
    if not tests:
        raise ValueError(f"{where}: no tests in public_tests, private_tests or generated_tests")
    d = _cc_difficulty(row, where)
    tl = row.get("time_limit") or {}
    meta = {"difficulty_name": CC_DIFFICULTIES[d] if 0 <= d < len(CC_DIFFICULTIES) else str(d),
            "n_public": n_public, "memory_limit_bytes": row.get("memory_limit_bytes")}
    if tl.get("seconds") is not None:
        meta["time_limit"] = tl["seconds"] + (tl.get("nanos") or 0) / 1e9
    return Problem(id=f"code_contests/{_need(row, 'name', where)}", question=_need(row, "description", where),
                   tests=tests[:max_tests], domain="code", difficulty=float(d), source="code_contests",
                   metadata={k: v for k, v in meta.items() if v is not None})


def load_code_contests(path: str | Path, difficulties: Iterable[int | str] | None = None,
                       max_tests: int | None = None, split: str | None = None,
                       limit: int | None = None, skip_bad: bool = False) -> list[Problem]:
    """CodeContests rows as problems.

    `difficulties` keeps only those enum values or names (e.g. ``["EASY", "A"]``);
    `max_tests` caps tests per problem (public first); `split` selects by file name or stamps (module docstring);
    `limit` stops after that many problems; `skip_bad` leaves bad rows out with a warning.
    """
    unknown = [d for d in difficulties or () if isinstance(d, str) and d not in CC_DIFFICULTIES]
    if unknown:
        raise ValueError(f"CodeContests difficulties {unknown} are not enum names; expected ints or names from "
                         f"{CC_DIFFICULTIES}")
    keep = None if difficulties is None else {
        CC_DIFFICULTIES.index(d) if isinstance(d, str) else int(d) for d in difficulties}
    return _collect(path, lambda where, row: code_contests_problem(row, where, max_tests),
                    lambda where, row: keep is None or _cc_difficulty(row, where) in keep, split, limit, skip_bad)


# ---------------------------------------------------------------- APPS / TACO
def _seconds(v: Any) -> float | None:
    m = re.match(r"\s*([\d.]+)", str(v)) if v not in (None, "") else None
    return float(m.group(1)) if m else None


def apps_problem(row: dict, where: str, source: str = "apps") -> Problem | None:
    """One APPS/TACO row, or None if it has no tests."""
    raw = row.get("input_output")
    if not raw:
        return None
    try:
        io_ = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: 'input_output' is not JSON ({e})") from None
    if not isinstance(io_, dict):
        raise ValueError(f"{where}: 'input_output' must be an object with inputs and outputs, "
                         f"got {type(io_).__name__}")
    ins, outs = io_.get("inputs") or [], io_.get("outputs") or []
    if len(ins) != len(outs):
        raise ValueError(f"{where}: 'input_output' has {len(ins)} inputs and {len(outs)} outputs")
    if not ins:
        return None
    fn = io_.get("fn_name")
    if fn:
        for i, args in enumerate(ins):
            if not isinstance(args, list):
                raise ValueError(f"{where}: call-based input {i} must be a list of arguments, got {type(args).__name__}")
        tests = [{"fn_name": fn, "args": a, "expected": o} for a, o in zip(ins, outs)]
    else:
        tests = [{"input": _text(i), "output": _text(o)} for i, o in zip(ins, outs)]
    question, starter = _need(row, "question", where), row.get("starter_code") or ""
    if starter.strip():
        question += "\n\nStarter code:\n" + starter
    meta = {"difficulty_name": str(row.get("difficulty") or ""), "time_limit": _seconds(row.get("time_limit"))}
    pid = row.get("problem_id", row.get("id"))
    if pid is None:  # TACO has no id column: its file and row, the same whichever files were read with it
        name, _, n = where.rsplit(" ", 2)
        pid = f"{Path(name).stem}:{n}"
    return Problem(id=f"{source}/{pid}", question=question, tests=tests, domain="code", source=source,
                   metadata={k: v for k, v in meta.items() if v})


def load_apps(path: str | Path, difficulties: Iterable[str] | None = None, source: str = "apps",
              split: str | None = None, limit: int | None = None, skip_bad: bool = False) -> list[Problem]:
    """APPS or TACO rows (`source="taco"` for TACO ids); rows without tests are skipped.

    `difficulties` keeps those words, case-insensitive (APPS: introductory, interview,
    competition; TACO: EASY, MEDIUM, MEDIUM_HARD, HARD, VERY_HARD).
    """
    return _collect(path, lambda where, row: apps_problem(row, where, source),
                    _word_filter(difficulties), split, limit, skip_bad)


# ---------------------------------------------------------------- LiveCodeBench
class _NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: test cases are plain strings")


def _lcb_cases(raw: Any, where: str, field: str) -> list[dict]:
    if not raw:
        return []
    if isinstance(raw, list):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    try:  # the compressed form: base64(zlib(pickle(json string)))
        return json.loads(_NoGlobals(io.BytesIO(zlib.decompress(base64.b64decode(raw)))).load())
    except Exception as e:  # noqa: BLE001 - any failure means the field is malformed
        raise ValueError(f"{where}: {field!r} is neither JSON nor base64+zlib+pickle JSON ({type(e).__name__})") from None


def livecodebench_problem(row: dict, where: str, include_private: bool = True) -> Problem:
    meta_raw = row.get("metadata") or "{}"
    try:
        meta_in = json.loads(meta_raw) if isinstance(meta_raw, str) else meta_raw
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: 'metadata' is not JSON ({e})") from None
    if not isinstance(meta_in, dict):
        raise ValueError(f"{where}: 'metadata' must be a JSON object, got {type(meta_in).__name__}")
    cases = _lcb_cases(row.get("public_test_cases"), where, "public_test_cases")
    n_public = len(cases)
    if include_private:
        cases += _lcb_cases(row.get("private_test_cases"), where, "private_test_cases")
    tests = []
    for i, c in enumerate(cases):
        if not isinstance(c, dict):
            raise ValueError(f"{where}: test {i} must be an object with input, output and testtype, "
                             f"got {type(c).__name__}")
        if c.get("testtype") == "functional":
            fn = meta_in.get("func_name")
            if not fn:
                raise ValueError(f"{where}: functional test {i} but 'metadata' has no 'func_name'")
            try:
                args = [json.loads(line) for line in c["input"].split("\n") if line.strip()]
                tests.append({"fn_name": fn, "args": args, "expected": json.loads(c["output"])})
            except (json.JSONDecodeError, KeyError) as e:
                raise ValueError(f"{where}: functional test {i} is not JSON per line ({e})") from None
        elif c.get("testtype") == "stdin":
            tests.append({"input": c["input"], "output": c["output"]})
        else:
            raise ValueError(f"{where}: test {i} has testtype {c.get('testtype')!r}; expected 'stdin' or 'functional'")
    if not tests:
        raise ValueError(f"{where}: no test cases")
    question, starter = _need(row, "question_content", where), row.get("starter_code") or ""
    if starter.strip():
        question += "\n\nStarter code:\n" + starter
    return Problem(id=f"livecodebench/{_need(row, 'question_id', where)}", question=question, tests=tests,
                   domain="code", source="livecodebench",
                   metadata={"difficulty_name": str(row.get("difficulty") or ""), "n_public": n_public,
                             "platform": row.get("platform") or "", "contest_date": str(row.get("contest_date") or "")})


def load_livecodebench(path: str | Path, difficulties: Iterable[str] | None = None,
                       include_private: bool = True, split: str | None = None,
                       limit: int | None = None, skip_bad: bool = False) -> list[Problem]:
    """LiveCodeBench code-generation rows; `difficulties` e.g. ``["easy"]``."""
    return _collect(path, lambda where, row: livecodebench_problem(row, where, include_private),
                    _word_filter(difficulties), split, limit, skip_bad)
