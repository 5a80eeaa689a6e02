"""Code problem loaders: CodeContests, APPS/TACO and LiveCodeBench rows from local files,
in their own schemas, into Problems whose tests the sandbox accepts."""

import base64
import json
import pickle
import zlib

import pytest

from agon_env.sandbox import check_tests
from problems import DataError, SkippedRows
from problems.code import CC_DIFFICULTIES, load_apps, load_code_contests, load_code_easy, load_livecodebench

CC_ROW = {
    "name": "1234_A. Two Sums", "description": "Print a+b.", "difficulty": 7, "source": 2,
    "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
    "private_tests": {"input": ["5 5\n"], "output": ["10\n"]},
    "generated_tests": {"input": ["0 0\n", "9 1\n"], "output": ["0\n", "10\n"]},
    "time_limit": {"seconds": 2, "nanos": 500000000}, "memory_limit_bytes": 256000000,
}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_code_contests_jsonl_and_filters(tmp_path):
    f = write_jsonl(tmp_path / "cc.jsonl", [CC_ROW, {**CC_ROW, "name": "easy one", "difficulty": 1}])
    p, q = load_code_contests(f)
    assert p.id == "code_contests/1234_A. Two Sums" and p.domain == "code" and p.difficulty == 7.0
    assert [t["input"] for t in p.tests] == ["1 2\n", "5 5\n", "0 0\n", "9 1\n"]  # public first
    assert p.metadata == {"difficulty_name": "A", "n_public": 1, "memory_limit_bytes": 256000000, "time_limit": 2.5}
    assert q.metadata["difficulty_name"] == "EASY"
    assert [x.id for x in load_code_contests(f, difficulties=["EASY"])] == ["code_contests/easy one"]
    assert len(load_code_contests(f, max_tests=2, split="test")[0].tests) == 2
    assert load_code_contests(f, split="test")[0].split == "test"
    check_tests(p.tests)


def test_a_directory_of_every_shard_loads_one_split_at_a_time(tmp_path):
    """As deepmind/code_contests ships: train-*, valid-* and test-* shards in one directory.
    Stamping the asked split on every row put test problems into training."""
    from problems import load

    for name in ("train-00000-of-00002.jsonl", "train-00001-of-00002.jsonl", "valid-00000-of-00001.jsonl",
                 "test-00000-of-00001.jsonl", "extra.jsonl"):
        write_jsonl(tmp_path / name, [{**CC_ROW, "name": name}])
    split_of = lambda ps: {p.id.split("/")[1]: p.split for p in ps}  # noqa: E731
    assert split_of(load_code_contests(tmp_path, split="train")) == {
        "train-00000-of-00002.jsonl": "train", "train-00001-of-00002.jsonl": "train", "extra.jsonl": "train"}
    assert split_of(load_code_contests(tmp_path, split="test")) == {
        "test-00000-of-00001.jsonl": "test", "extra.jsonl": "test"}
    assert split_of(load_code_contests(tmp_path))["valid-00000-of-00001.jsonl"] == "validation"
    assert split_of(load_code_contests(tmp_path))["extra.jsonl"] is None
    assert [p.id for p in load("code_contests", path=tmp_path, split="validation")] == [
        "code_contests/valid-00000-of-00001.jsonl"]
    with pytest.raises(ValueError, match=r"no file of split 'test'.*\['train'\]"):
        load_code_contests(tmp_path / "train-00000-of-00002.jsonl", split="test")


def test_code_contests_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([CC_ROW]), tmp_path / "train-00000.parquet")
    (p,) = load_code_contests(tmp_path)  # a directory of files
    assert len(p.tests) == 4 and p.metadata["time_limit"] == 2.5


def test_code_contests_errors_name_the_row(tmp_path):
    bad = {**CC_ROW, "public_tests": {"input": ["1"], "output": []}}
    f = write_jsonl(tmp_path / "cc.jsonl", [CC_ROW, bad])
    with pytest.raises(ValueError, match=r"cc.jsonl line 2: 'public_tests' must have equal input and output"):
        load_code_contests(f)
    f = write_jsonl(tmp_path / "nodesc.jsonl", [{k: v for k, v in CC_ROW.items() if k != "description"}])
    with pytest.raises(ValueError, match=r"nodesc.jsonl line 1: missing 'description'"):
        load_code_contests(f)
    with pytest.raises(ValueError, match="expected a .jsonl, .json or .parquet file"):
        load_code_contests(tmp_path / "cc.csv")
    assert CC_DIFFICULTIES[7] == "A" and CC_DIFFICULTIES[1] == "EASY"


def test_code_contests_unknown_difficulty_name_is_named(tmp_path):
    f = write_jsonl(tmp_path / "cc.jsonl", [CC_ROW])
    with pytest.raises(ValueError, match=r"difficulties \['easy'\] are not enum names; expected .*'EASY'"):
        load_code_contests(f, difficulties=["easy"])


def test_code_contests_reports_every_bad_row(tmp_path):
    rows = [CC_ROW, {**CC_ROW, "difficulty": "hard"}, '{"name": "x",', {**CC_ROW, "name": ""}, CC_ROW]
    f = tmp_path / "cc.jsonl"
    f.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    with pytest.raises(DataError) as e:
        load_code_contests(f, difficulties=["A"])
    assert e.value.errors == [
        "cc.jsonl line 2: 'difficulty' must be the CodeContests enum (an int), got 'hard'",
        "cc.jsonl line 3: invalid JSON: Expecting property name enclosed in double quotes: column 14 (char 13)",
        "cc.jsonl line 4: missing 'name'"]
    with pytest.warns(SkippedRows, match=r"skipped 3 bad row\(s\), kept 2"):
        assert len(load_code_contests(f, skip_bad=True)) == 2


def test_apps_and_livecodebench_report_every_bad_row(tmp_path):
    ok = {"problem_id": 1, "question": "q", "input_output": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]})}
    apps = [ok, {**ok, "input_output": '{"inputs": [1'}, {**ok, "input_output": "[1, 2]"},
            {**ok, "input_output": json.dumps({"inputs": ["1"], "outputs": []})}]
    with pytest.raises(DataError) as e:
        load_apps(write_jsonl(tmp_path / "apps.jsonl", apps))
    assert e.value.errors == [
        "apps.jsonl line 2: 'input_output' is not JSON (Expecting ',' delimiter: line 1 column 14 (char 13))",
        "apps.jsonl line 3: 'input_output' must be an object with inputs and outputs, got list",
        "apps.jsonl line 4: 'input_output' has 1 inputs and 0 outputs"]
    lcb_ok = {"question_id": "a", "question_content": "q",
              "public_test_cases": json.dumps([{"input": "1\n", "output": "1\n", "testtype": "stdin"}])}
    lcb = [lcb_ok, {**lcb_ok, "metadata": "{bad"}, {**lcb_ok, "public_test_cases": "[1]"}]
    f = tmp_path / "lcb.json"
    f.write_text(json.dumps(lcb))
    with pytest.raises(DataError) as e:
        load_livecodebench(f)
    assert e.value.errors == [
        ("lcb.json row 2: 'metadata' is not JSON "
         "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        "lcb.json row 3: test 0 must be an object with input, output and testtype, got int"]
    f.write_text(json.dumps(lcb)[:-3])
    with pytest.raises(DataError, match=r"^lcb.json: invalid JSON: .*: line 1 column \d+ \(char \d+\)$"):
        load_livecodebench(f)
    f.write_text(json.dumps({"rows": lcb}))
    with pytest.raises(DataError, match="lcb.json: expected a JSON list of rows, got dict"):
        load_livecodebench(f)


def test_apps_and_taco(tmp_path):
    rows = [
        {"problem_id": 10, "question": "Sum lines.", "difficulty": "introductory",
         "input_output": json.dumps({"inputs": ["1\n2\n", ["3", "4"]], "outputs": ["3\n", ["7"]]})},
        {"problem_id": 11, "question": "Add.", "difficulty": "interview", "starter_code": "def add(a, b):",
         "input_output": json.dumps({"fn_name": "add", "inputs": [[1, 2]], "outputs": [[3]]})},
        {"problem_id": 12, "question": "No tests.", "difficulty": "interview", "input_output": ""},
    ]
    f = write_jsonl(tmp_path / "apps.jsonl", rows)
    a, b = load_apps(f)
    assert a.tests == [{"input": "1\n2\n", "output": "3\n"}, {"input": "3\n4\n", "output": "7\n"}]
    assert b.tests == [{"fn_name": "add", "args": [1, 2], "expected": [3]}] and "def add(a, b):" in b.question
    assert [p.id for p in load_apps(f, difficulties=["INTERVIEW"])] == ["apps/11"]
    taco = [{"question": "Echo.", "difficulty": "EASY", "time_limit": "2 seconds",
             "input_output": {"inputs": ["x\n"], "outputs": ["x\n"]}}]
    (t,) = load_apps(write_jsonl(tmp_path / "taco.jsonl", taco), source="taco")
    assert t.id == "taco/taco:1" and t.metadata["time_limit"] == 2.0  # no id column: its file and line
    shards = tmp_path / "taco"
    shards.mkdir()
    write_jsonl(shards / "train.jsonl", taco * 2)
    write_jsonl(shards / "test.jsonl", taco)
    every = [p.id for p in load_apps(shards, source="taco")]
    assert every == ["taco/test:1", "taco/train:1", "taco/train:2"]  # one id per row, the same alone or with others
    assert [p.id for p in load_apps(shards, source="taco", split="train")] == every[1:]
    bad = [{"problem_id": 1, "question": "q", "input_output": "{not json"}]
    with pytest.raises(ValueError, match=r"bad.jsonl line 1: 'input_output' is not JSON"):
        load_apps(write_jsonl(tmp_path / "bad.jsonl", bad))


def _compressed(cases):
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def test_livecodebench_stdin_functional_and_compressed(tmp_path):
    rows = [
        {"question_id": "abc001_a", "question_content": "Double it.", "difficulty": "easy", "platform": "atcoder",
         "public_test_cases": json.dumps([{"input": "2\n", "output": "4\n", "testtype": "stdin"}]),
         "private_test_cases": _compressed([{"input": "5\n", "output": "10\n", "testtype": "stdin"}]),
         "metadata": "{}"},
        {"question_id": "lc1", "question_content": "Two sum.", "difficulty": "medium", "platform": "leetcode",
         "starter_code": "class Solution:\n    def twoSum(self, nums, target):",
         "public_test_cases": json.dumps([{"input": "[2, 7, 11]\n9", "output": "[0, 1]", "testtype": "functional"}]),
         "private_test_cases": "[]", "metadata": json.dumps({"func_name": "twoSum"})},
    ]
    f = tmp_path / "lcb.json"
    f.write_text(json.dumps(rows))
    a, b = load_livecodebench(f)
    assert a.tests == [{"input": "2\n", "output": "4\n"}, {"input": "5\n", "output": "10\n"}]
    assert a.metadata["n_public"] == 1
    assert b.tests == [{"fn_name": "twoSum", "args": [[2, 7, 11], 9], "expected": [0, 1]}]
    assert len(load_livecodebench(f, include_private=False)[0].tests) == 1
    assert [p.id for p in load_livecodebench(f, difficulties=["easy"])] == ["livecodebench/abc001_a"]


def test_livecodebench_refuses_pickled_objects(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    row = {"question_id": "x", "question_content": "q", "public_test_cases": "[]",
           "private_test_cases": base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()}
    with pytest.raises(ValueError, match=r"e.jsonl line 1: 'private_test_cases' is neither JSON"):
        load_livecodebench(write_jsonl(tmp_path / "e.jsonl", [row]))


def test_bundled_easy_set():
    problems = load_code_easy()
    assert len(problems) >= 12 and len({p.id for p in problems}) == len(problems)
    for p in problems:
        check_tests(p.tests)
        assert p.domain == "code" and p.solution and "```python" in p.solution
    assert {p.split for p in problems} == {"train", "validation", "test"}
    assert all(p.split == "test" for p in load_code_easy(split="test"))
