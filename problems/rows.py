"""Raw rows from data files, and one report of every bad row.

Loaders read ``.jsonl`` (one row per line), ``.json`` (a list of rows), ``.parquet``
(needs ``pyarrow``) or a directory of them (in name order) as ``(where, row)`` pairs,
``where`` being ``FILE line N`` or ``FILE row N``. `parse_rows` turns the rows into
problems and collects each bad one as ``FILE line N: what was wrong``. If any are bad it
raises one `DataError` listing them all (the first `MAX_LISTED`, then a count), or, with
``skip_bad=True``, keeps the good rows and warns (`SkippedRows`) how many it left out.
Nothing is loaded partly and silently.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

T = TypeVar("T")
MAX_LISTED = 20
ROW_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError)


class DataError(ValueError):
    """Bad rows in a data source; `errors` holds every one as ``FILE line N: what was wrong``.

    The message lists the first `MAX_LISTED`, one per line, then ``... and K more``."""

    def __init__(self, errors: Sequence[str]):
        self.errors = list(errors)
        more = len(self.errors) - MAX_LISTED
        super().__init__("\n".join(self.errors[:MAX_LISTED] + ([f"... and {more} more"] if more > 0 else [])))


class SkippedRows(UserWarning):
    """``skip_bad=True`` left bad rows out; the message counts them and shows the first."""


def either(suffixes: Sequence[str]) -> str:
    """'.a, .b or .c', for messages."""
    return " or ".join([", ".join(suffixes[:-1]), suffixes[-1]] if len(suffixes) > 1 else suffixes)


def find_files(path: str | Path, suffixes: Sequence[str]) -> list[Path]:
    """The file itself, or a directory's files with these suffixes, in name order."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in suffixes and p.is_file())
        if not files:
            raise ValueError(f"{path}: no {either(suffixes)} files in this directory")
        return files
    if path.suffix not in suffixes:
        raise ValueError(f"{path}: expected a {either(suffixes)} file or a directory of them")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    return [path]


def _jsonl_rows(f: Path) -> Iterator[tuple[str, Any]]:
    with f.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            where = f"{f.name} line {lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield where, ValueError(f"not UTF-8 text ({e.reason} at byte {e.start})")
                continue
            if not line.strip():
                continue
            try:
                yield where, json.loads(line.rstrip("\r\n"))  # so the error's column is on this line
            except json.JSONDecodeError as e:  # e.msg alone drops the position; str(e) has it
                yield where, ValueError(f"invalid JSON: {e.msg}: column {e.colno} (char {e.pos})")


def _json_rows(f: Path) -> Iterator[tuple[str, Any]]:
    try:
        rows = json.loads(f.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        yield f.name, ValueError(f"invalid JSON: {e}")
        return
    if not isinstance(rows, list):
        yield f.name, ValueError(f"expected a JSON list of rows, got {type(rows).__name__}")
        return
    for i, row in enumerate(rows, 1):
        yield f"{f.name} row {i}", row


def _parquet_rows(f: Path, columns: Sequence[str] | None) -> Iterator[tuple[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{f.name}: reading parquet needs pyarrow (pip install pyarrow), "
                          "or convert the file to JSONL") from None
    row = 0
    try:
        pf = pq.ParquetFile(f)
        if columns is not None:  # read only what is needed (DeepMath's r1 solutions are ~1 GB)
            columns = [c for c in columns if c in pf.schema_arrow.names]
        for batch in pf.iter_batches(columns=columns):
            for r in batch.to_pylist():
                row += 1
                yield f"{f.name} row {row}", r
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        yield f.name, ValueError(f"unreadable parquet{f' after row {row}' if row else ''}: {e}")


def read_rows(path: str | Path, suffixes: Sequence[str], columns: Sequence[str] | None = None
              ) -> Iterator[tuple[str, Any]]:
    """(where, row) for every row of every file. A line or file that does not parse comes
    as (where, ValueError) for `parse_rows` to report; `columns` limits parquet reads."""
    for f in find_files(path, suffixes):
        if f.suffix == ".parquet":
            yield from _parquet_rows(f, columns)
        elif f.suffix == ".json":
            yield from _json_rows(f)
        else:
            yield from _jsonl_rows(f)


def parse_rows(rows: Iterable[tuple[str, Any]], parse: Callable[[str, dict], T | None], source: str,
               skip_bad: bool = False, limit: int | None = None) -> list[T]:
    """`parse(where, row)` for each object row (None leaves a row out), up to `limit` results.

    Every bad row is collected; then `DataError` lists them all, or with `skip_bad` they are
    left out with a `SkippedRows` warning naming `source` and the count."""
    out: list[T] = []
    errors: list[str] = []
    for where, row in rows:
        if limit is not None and len(out) >= limit:
            break
        try:
            if isinstance(row, Exception):
                raise row
            if not isinstance(row, dict):
                raise ValueError(f"a row must be a JSON object, got {type(row).__name__}")
            item = parse(where, row)
        except ROW_ERRORS as e:
            msg = str(e) if isinstance(e, ValueError) else f"unexpected row shape ({type(e).__name__}: {e})"
            errors.append(msg if msg.startswith(f"{where}:") else f"{where}: {msg}")
            continue
        if item is not None:
            out.append(item)
    if errors and not skip_bad:
        raise DataError(errors)
    if errors:
        warnings.warn(SkippedRows(f"{source}: skipped {len(errors)} bad row(s), kept {len(out)}; "
                                  f"first: {errors[0]}"), stacklevel=3)
    return out
