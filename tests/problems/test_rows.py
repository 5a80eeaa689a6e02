"""Bad data fails whole and clean: every bad row is named (FILE line N: what was wrong),
one DataError carries them all, skip_bad loads the rest with a count, and the CLI prints
the list and exits 2 without a traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from problems import DataError, SkippedRows, load
from problems.record import read_jsonl
from problems.rows import MAX_LISTED, find_files

REPO = Path(__file__).resolve().parents[2]
GOOD = {"id": "p1", "question": "1+1?", "answer": "2"}


def lines(path, *rows):
    """Write raw lines (str as is, anything else as JSON)."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture
def two_bad(tmp_path):
    """Problem records: good, bad JSON (a raw tab inside a string), good, unknown field, missing id."""
    return lines(tmp_path / "recs.jsonl", GOOD, '{"id": "p2", "question": "a\tb"}', {**GOOD, "id": "p3"},
                 {**GOOD, "id": "p4", "answr": "2"}, {"question": "q", "answer": "1"})


def test_every_bad_line_is_named_with_the_json_position(two_bad):
    with pytest.raises(DataError) as e:
        read_jsonl(two_bad)
    assert e.value.errors == [
        "recs.jsonl line 2: invalid JSON: Invalid control character at: column 28 (char 27)",
        ("recs.jsonl line 4: unknown field(s) ['answr']; expected some of "
         "['answer', 'difficulty', 'domain', 'id', 'metadata', 'question', 'solution', 'source', 'split', 'tests']"),
        "recs.jsonl line 5: missing 'id'",
    ]
    assert str(e.value) == "\n".join(e.value.errors)
    assert isinstance(e.value, ValueError)  # callers catching ValueError keep working


def test_skip_bad_keeps_the_good_rows_and_counts_the_rest(two_bad):
    with pytest.warns(SkippedRows, match=r"recs.jsonl: skipped 3 bad row\(s\), kept 2; first: recs.jsonl line 2"):
        kept = read_jsonl(two_bad, skip_bad=True)
    assert [p.id for p in kept] == ["p1", "p3"]
    with pytest.warns(SkippedRows, match="skipped 3"):
        assert [p.id for p in load(str(two_bad), skip_bad=True)] == ["p1", "p3"]
    with pytest.raises(DataError):
        load(str(two_bad))


def test_the_list_is_capped_with_a_count(tmp_path):
    path = lines(tmp_path / "many.jsonl", *["{oops"] * (MAX_LISTED + 5))
    with pytest.raises(DataError) as e:
        read_jsonl(path)
    shown = str(e.value).splitlines()
    assert len(e.value.errors) == MAX_LISTED + 5 and len(shown) == MAX_LISTED + 1
    assert shown[0].startswith("many.jsonl line 1: invalid JSON: Expecting property name enclosed in double quotes")
    assert shown[-1] == "... and 5 more"


def test_rows_that_are_not_objects_or_not_utf8(tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n[1, 2]\n\"text\"\n\xff\xfe{}\n")
    with pytest.raises(DataError) as e:
        read_jsonl(path)
    assert e.value.errors == ["odd.jsonl line 2: a row must be a JSON object, got list",
                              "odd.jsonl line 3: a row must be a JSON object, got str",
                              "odd.jsonl line 4: not UTF-8 text (invalid start byte at byte 0)"]


def test_null_ids_and_misshapen_tests_or_metadata_are_named_at_their_line(tmp_path):
    code = {"id": "c", "question": "Print 3.", "domain": "code"}
    path = lines(tmp_path / "shapes.jsonl", GOOD, {**GOOD, "id": None}, {**code, "tests": "print 3"},
                 {**code, "tests": [["", "3"]]}, {**GOOD, "id": "m", "metadata": "hard"})
    with pytest.raises(DataError) as e:
        read_jsonl(path)
    assert e.value.errors == [
        "shapes.jsonl line 2: missing 'id'",
        "shapes.jsonl line 3: Problem 'c': 'tests' must be a list of test-case objects, got 'print 3'",
        "shapes.jsonl line 4: Problem 'c': 'tests' must be a list of test-case objects, got [['', '3']]",
        "shapes.jsonl line 5: Problem 'm': 'metadata' must be an object, got str",
    ]


def test_file_lookup_is_shared_and_names_what_it_expected(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"empty: no .jsonl, .json or .parquet files in this directory"):
        find_files(tmp_path / "empty", (".jsonl", ".json", ".parquet"))
    with pytest.raises(ValueError, match=r"rows.csv: expected a .parquet or .jsonl file or a directory of them"):
        find_files(tmp_path / "rows.csv", (".parquet", ".jsonl"))
    with pytest.raises(FileNotFoundError, match=r"nope.jsonl: no such file"):
        read_jsonl(tmp_path / "nope.jsonl")


def _cli(*args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "problems", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=120)


def test_cli_lists_every_bad_row_and_exits_2(two_bad):
    r = _cli("stats", str(two_bad))
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [
        "error: 3 bad rows:",
        "  recs.jsonl line 2: invalid JSON: Invalid control character at: column 28 (char 27)",
        ("  recs.jsonl line 4: unknown field(s) ['answr']; expected some of ['answer', 'difficulty', 'domain', "
         "'id', 'metadata', 'question', 'solution', 'source', 'split', 'tests']"),
        "  recs.jsonl line 5: missing 'id'",
        "fix them, or pass --skip-bad to load the good rows",
    ]
    r = _cli("stats", str(two_bad), "--skip-bad")
    assert r.returncode == 0 and r.stdout.startswith("2 problems from")
    assert "warning: " in r.stderr and "skipped 3 bad row(s), kept 2" in r.stderr and "Traceback" not in r.stderr
    r = _cli("show", "code_contests")  # a usage error is one line too
    assert r.returncode == 2 and r.stderr.startswith("error: this code source needs path=")
    assert "Traceback" not in r.stderr
