"""DeepMath-103K: schema, the paper's hard split, deterministic splits, malformed-file errors."""

import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from problems import DataError, SkippedRows, load
from problems.__main__ import main
from problems.deepmath import is_binary, is_deepmath_path, load_deepmath, read_deepmath
from problems.record import read_jsonl, write_jsonl

BINARY = ["Yes", "no", "\\text{True}", "$False$", "\\boxed{yes}", "No."]


def _rows(n_hard=40, n_other=20):
    """Rows in DeepMath's schema: n_hard at difficulty 8 with real answers, plus decoys."""
    rows = []
    for i in range(n_hard):
        rows.append({"question": f"Evaluate the integral number {i}.", "final_answer": f"\\frac{{{i}}}{{7}}",
                     "difficulty": 8.0, "topic": "Mathematics -> Calculus", "r1_solution_1": f"sol {i}",
                     "r1_solution_2": "b", "r1_solution_3": "c"})
    for i, ans in enumerate(BINARY):  # difficulty 8 but binary: dropped
        rows.append({"question": f"Is statement {i} true?", "final_answer": ans, "difficulty": 8.0,
                     "topic": "Logic", "r1_solution_1": "", "r1_solution_2": "", "r1_solution_3": ""})
    for i in range(n_other):  # other difficulties: dropped
        rows.append({"question": f"Compute {i} + 1.", "final_answer": str(i + 1), "difficulty": 8.5 if i % 2 else 5.0,
                     "topic": "Algebra", "r1_solution_1": "", "r1_solution_2": "", "r1_solution_3": ""})
    rows.append(dict(rows[0]))  # a repeated question is kept once
    return rows


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def deepmath_jsonl(tmp_path):
    return _jsonl(tmp_path / "deepmath.jsonl", _rows())


def test_schema_and_hard_split(deepmath_jsonl):
    everything = read_deepmath(deepmath_jsonl, keep_solutions=True)
    assert len(everything) == 40 + len(BINARY) + 20
    p = everything[0]
    assert p.question == "Evaluate the integral number 0." and p.answer == "\\frac{0}{7}"
    assert p.difficulty == 8.0 and p.source == "deepmath" and p.metadata["topic"] == "Mathematics -> Calculus"
    assert p.metadata["r1_solutions"] == ["sol 0", "b", "c"] and p.metadata["origin"] == "deepmath.jsonl line 1"
    hard = load_deepmath(deepmath_jsonl, n_train=None, n_test=10)
    assert len(hard) == 40
    assert all(p.difficulty == 8.0 and not is_binary(p.answer) for p in hard)
    assert {p.question for p in hard} == {f"Evaluate the integral number {i}." for i in range(40)}


@pytest.mark.parametrize("answer", BINARY + ["\\text{ YES }", "true!"])
def test_binary_answers(answer):
    assert is_binary(answer)


@pytest.mark.parametrize("answer", ["\\boxed{\\text{No}}", "$\\boxed{\\textbf{Yes}}$", "\\text{\\mathrm{true}}"])
def test_nested_wrappers_are_unwrapped(answer):
    assert is_binary(answer)
    assert not is_binary("\\boxed{\\text{no solution}}")


@pytest.mark.parametrize("answer", ["2", "\\frac{1}{2}", "no solution", "yes and no", "\\infty", "None"])
def test_non_binary_answers(answer):
    assert not is_binary(answer)


def test_split_is_deterministic_disjoint_and_ignores_file_order(tmp_path, deepmath_jsonl):
    a = load_deepmath(deepmath_jsonl, n_train=25, n_test=10, n_validation=5)
    assert [p.to_dict() for p in a] == [p.to_dict() for p in load_deepmath(deepmath_jsonl, n_train=25, n_test=10,
                                                                          n_validation=5)]
    sizes = {s: sum(p.split == s for p in a) for s in ("train", "validation", "test")}
    assert sizes == {"train": 25, "validation": 5, "test": 10}
    assert len({p.question for p in a}) == len(a)
    reversed_file = _jsonl(tmp_path / "rev.jsonl", _rows()[::-1])
    b = load_deepmath(reversed_file, n_train=25, n_test=10, n_validation=5)
    assert {(p.question, p.split) for p in a} == {(p.question, p.split) for p in b}
    c = load_deepmath(deepmath_jsonl, n_train=25, n_test=10, n_validation=5, seed=1)
    assert {p.question for p in a if p.split == "test"} != {p.question for p in c if p.split == "test"}


def test_paper_defaults_need_3300_hard_problems(deepmath_jsonl, tmp_path):
    with pytest.raises(ValueError, match="40 hard problems, fewer than n_test"):
        load_deepmath(deepmath_jsonl, n_test=300)
    rows = [{"question": f"Q{i}?", "final_answer": str(i), "difficulty": 8} for i in range(3400)]
    big = load_deepmath(_jsonl(tmp_path / "big.jsonl", rows))
    assert sum(p.split == "test" for p in big) == 300 and sum(p.split == "train" for p in big) == 3000
    assert len(big) == 3300


@pytest.mark.parametrize("counts", [{"n_validation": -3}, {"n_test": -1}, {"n_train": -5}, {"n_test": 2.5}])
def test_bad_split_sizes_are_refused(deepmath_jsonl, counts):
    with pytest.raises(ValueError, match=f"{next(iter(counts))} must be a non-negative int"):
        load_deepmath(deepmath_jsonl, **{"n_train": 10, "n_test": 5, **counts})


def test_parquet_and_directory(tmp_path, deepmath_jsonl):
    rows = _rows()
    pq.write_table(pa.Table.from_pylist(rows[:30]), tmp_path / "part-0.parquet")
    _jsonl(tmp_path / "part-1.jsonl", rows[30:])
    from_dir = load_deepmath(tmp_path, n_train=None, n_test=10)
    from_file = load_deepmath(deepmath_jsonl, n_train=None, n_test=10)
    assert [p.question for p in from_dir] == [p.question for p in from_file]
    assert read_deepmath(tmp_path / "part-0.parquet")[2].metadata["origin"] == "part-0.parquet row 3"
    assert "r1_solutions" not in read_deepmath(tmp_path / "part-0.parquet")[0].metadata
    assert read_deepmath(tmp_path / "part-0.parquet", keep_solutions=True)[0].metadata["r1_solutions"] == ["sol 0", "b", "c"]


def test_through_problems_load_and_jsonl_round_trip(deepmath_jsonl, tmp_path):
    test = load("deepmath", path=deepmath_jsonl, split="test", n_train=20, n_test=10)
    assert len(test) == 10 and {p.split for p in test} == {"test"}
    assert load(str(deepmath_jsonl), split="test", n_train=20, n_test=10) == test  # a path is recognised
    again = read_jsonl(write_jsonl(test, tmp_path / "out.jsonl"))
    assert again == test


@pytest.mark.parametrize("bad, message", [
    ({"final_answer": "1", "difficulty": 8}, "bad.jsonl line 3: missing 'question'"),
    ({"question": "Q?", "difficulty": 8}, "bad.jsonl line 3: missing 'final_answer'"),
    ({"question": "Q?", "final_answer": "1"}, "bad.jsonl line 3: missing 'difficulty'"),
    ({"question": "Q?", "final_answer": "1", "difficulty": "hard"}, "bad.jsonl line 3: 'difficulty' must be a number"),
    ({"question": "  ", "final_answer": "1", "difficulty": 8}, "bad.jsonl line 3: 'question' must be a non-empty"),
    ({"question": "Q?", "final_answer": "", "difficulty": 8}, "bad.jsonl line 3: 'final_answer' must be a non-empty"),
    ({"question": "Q?", "final_answer": "1", "difficulty": 8, "topic": 3}, "bad.jsonl line 3: 'topic' must be"),
    (["not", "an", "object"], "bad.jsonl line 3: a row must be a JSON object, got list"),
])
def test_malformed_rows_name_file_line_and_field(tmp_path, bad, message):
    good = _rows()[:2]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good[0]) + "\n" + json.dumps(good[1]) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError) as e:
        read_deepmath(path)
    assert str(e.value).startswith(message)


def test_malformed_files(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(_rows()[0]) + "\n\n{oops\n")
    with pytest.raises(ValueError, match=r"broken.jsonl line 3: invalid JSON"):
        read_deepmath(path)
    rows = _rows()[:3]
    rows[1] = dict(rows[1], final_answer=None)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad.parquet row 2: missing 'final_answer'"):
        read_deepmath(tmp_path / "bad.parquet")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_deepmath(tmp_path / "nope.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .parquet or .jsonl files"):
        read_deepmath(tmp_path / "empty")
    with pytest.raises(ValueError, match="expected a .parquet or .jsonl file"):
        read_deepmath(_jsonl(tmp_path / "rows.csv", []))


def test_every_bad_row_is_reported_and_skip_bad_keeps_the_rest(tmp_path):
    rows = _rows()
    path = tmp_path / "dm.jsonl"
    lines = ['{"question": "Q\x01", "final_answer": "1", "difficulty": 8}',  # a raw control character
             json.dumps(rows[0]), json.dumps(dict(rows[1], final_answer=None)),
             json.dumps(rows[2]), '{"question": "Q?", "final_answer": "1", "difficulty": 8,}']  # trailing comma
    path.write_text("\n".join(lines) + "\n")
    assert is_deepmath_path(path)  # a bad first line does not hide the schema
    with pytest.raises(DataError) as e:
        read_deepmath(path)
    assert e.value.errors == [
        "dm.jsonl line 1: invalid JSON: Invalid control character at: column 16 (char 15)",
        "dm.jsonl line 3: missing 'final_answer'",
        "dm.jsonl line 5: invalid JSON: Expecting property name enclosed in double quotes: column 57 (char 56)",
    ]
    with pytest.warns(SkippedRows, match=r"skipped 3 bad row\(s\), kept 2"):
        kept = load("deepmath", path=path, hard=False, n_test=1, n_train=None, skip_bad=True)
    assert sorted(p.question for p in kept) == sorted(r["question"] for r in (rows[0], rows[2]))


def test_bad_parquet_rows_are_all_reported(tmp_path, capsys):
    rows = _rows()[:5]
    rows[1] = dict(rows[1], final_answer=None)
    rows[3] = dict(rows[3], question="  ")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "part-0.parquet")
    with pytest.raises(DataError) as e:
        read_deepmath(tmp_path)
    assert e.value.errors == ["part-0.parquet row 2: missing 'final_answer'",
                              "part-0.parquet row 4: 'question' must be a non-empty string, got '  '"]
    (tmp_path / "part-1.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError) as e:
        read_deepmath(tmp_path)
    assert len(e.value.errors) == 3 and e.value.errors[2].startswith("part-1.parquet: unreadable parquet: ")
    with pytest.raises(SystemExit) as exit_:
        main(["stats", "deepmath", "--path", str(tmp_path)])
    assert exit_.value.code == 2 and "error: 3 bad rows:\n  part-0.parquet row 2: missing" in capsys.readouterr().err
    main(["stats", "deepmath", "--path", str(tmp_path), "--skip-bad"])
    out = capsys.readouterr()
    assert out.out.startswith("3 problems") and "skipped 3 bad row(s), kept 3" in out.err


def test_parquet_without_pyarrow_says_what_to_do(tmp_path, monkeypatch):
    pq.write_table(pa.Table.from_pylist(_rows()[:2]), tmp_path / "d.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match="d.parquet: reading parquet needs pyarrow"):
        read_deepmath(tmp_path / "d.parquet")


def test_hub_name_without_datasets_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(FileNotFoundError, match="needs the 'datasets' package"):
        read_deepmath("zwhe99/DeepMath-103K")


def test_which_copy_of_a_repeated_question_is_kept_does_not_depend_on_file_order(tmp_path):
    rows = _rows(n_hard=12, n_other=0)[:-1]
    hard, easy = dict(rows[0]), {**rows[0], "question": "  " + rows[0]["question"].upper(), "difficulty": 5.0}
    kept = []
    for order in ([hard, easy], [easy, hard]):
        path = _jsonl(tmp_path / f"{len(kept)}.jsonl", order + rows[1:])
        kept.append({p.id: (p.question, p.difficulty) for p in read_deepmath(path)})
        kept[-1]["hard problems"] = len(load_deepmath(path, n_train=None, n_test=5))
    assert kept[0] == kept[1]  # the first copy used to win: 12 hard problems one way, 11 the other
