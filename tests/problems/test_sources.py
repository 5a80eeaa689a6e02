"""problems.load and the command line."""

import json
import sys

import pytest

from problems import SOURCES, load
from problems.__main__ import main
from problems.generate import BUNDLED_PATH
from problems.record import write_jsonl


def test_load_filters():
    hard_test = load("arith", split="test", tier="hard")
    assert hard_test and all(p.split == "test" and p.metadata["tier"] == "hard" and p.difficulty == 3
                             for p in hard_test)
    assert len(load("arith", difficulty=1.0)) == len(load("arith", tier="easy"))
    assert len(load("arith")) == sum(len(load("arith", split=s)) for s in ("train", "validation", "test"))


def test_load_a_jsonl_path(tmp_path):
    few = load("arith", split="validation")[:5]
    path = write_jsonl(few, tmp_path / "few.jsonl")
    assert load(str(path)) == few
    assert load(str(path), tier="hard") == [p for p in few if p.metadata["tier"] == "hard"]


@pytest.mark.parametrize("call, error, message", [
    (lambda: load("nope"), ValueError, "unknown problem source 'nope'"),
    (lambda: load("arith", split="dev"), ValueError, "split must be one of"),
    (lambda: load("arith", tier="extreme"), ValueError, "arith tier must be one of"),
    (lambda: load("arith", tier=""), ValueError, "tier '' names no tier"),
    (lambda: load("arith", tier=[]), ValueError, r"tier \[\] names no tier"),
    (lambda: load("arith", seed=3), TypeError, "source 'arith' takes no options"),
    (lambda: load("deepmath"), TypeError, "needs path="),
])
def test_load_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_split_of_a_source_without_splits_is_refused_not_empty(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "1+1", "answer": "2"}) + "\n")
    assert len(load(str(path))) == 1
    with pytest.raises(ValueError, match="assigns no splits .* split='train' would keep none"):
        load(str(path), split="train")
    cc = tmp_path / "cc.jsonl"
    cc.write_text(json.dumps({"name": "A", "description": "Print 3.",
                              "public_tests": {"input": [""], "output": ["3\n"]}}) + "\n")
    with pytest.raises(ValueError, match="'code_contests' assigns no splits"):
        load("code_contests", path=str(cc), split="test")


def test_reasoning_gym_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)
    with pytest.raises(ImportError, match="pip install 'agon\\[reasoning-gym\\]'"):
        load("reasoning_gym", task="chain_sum", n=3)


def test_cli_list(capsys):
    main(["list"])
    out = capsys.readouterr().out
    assert all(name in out for name in SOURCES)


def test_cli_show(capsys):
    main(["show", "arith", "--n", "2", "--split", "test", "--tier", "hard"])
    out = capsys.readouterr().out
    first = load("arith", split="test", tier="hard")[0]
    assert out.count("  Q: ") == 2 and first.question in out and first.solution in out
    visible = next(line for line in out.splitlines() if line.startswith("  visible part"))
    assert visible.endswith(": " + first.solution.split("</think>")[1].split("<answer>")[0].strip())
    shown = visible.split("): ", 1)[1]
    assert "<answer>" not in shown and "<think>" not in shown and "</think>" not in shown


def test_visible_part_only_for_the_arith_layout():
    from problems.__main__ import visible_part

    assert visible_part("<think>2+3=5</think>so 5 then ×2<answer>10</answer>") == "so 5 then ×2"
    assert visible_part("just prose, answer 10") is None
    assert visible_part("<think>unclosed reasoning") is None
    assert visible_part("<think>a</think>no answer block") is None


def test_cli_stats_arith(capsys):
    main(["stats", "arith"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{len(load('arith'))} problems from arith"
    assert out[2].split() == ["1", "2000", "400", "600", "3000", "easy"]
    assert out[4].split()[-1] == "hard"


def test_cli_stats_deepmath_path(tmp_path, capsys):
    rows = ([{"question": f"Q{i}?", "final_answer": str(i), "difficulty": 8.0} for i in range(5)]
            + [{"question": "Is it?", "final_answer": "Yes", "difficulty": 8.0},
               {"question": "Easy?", "final_answer": "3", "difficulty": 3.5}])
    path = tmp_path / "dm.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    main(["stats", str(path)])
    out = capsys.readouterr().out
    assert "7 problems" in out
    assert "hard split (difficulty 8, binary answers dropped): 5 (1 binary dropped)" in out
    table = {line.split()[0]: line.split()[-1] for line in out.splitlines()[2:4]}
    assert table == {"3.5": "1", "8": "6"}
    main(["stats", "deepmath", "--path", str(path)])
    assert "hard split" in capsys.readouterr().out


def test_cli_build_writes_the_bundled_set(tmp_path, capsys):
    out = tmp_path / "arith.jsonl"
    main(["build", "--out", str(out)])
    assert out.read_bytes() == BUNDLED_PATH.read_bytes()
    main(["build", "--out", str(out), "--train", "10", "--validation", "5", "--test", "5", "--seed", "4"])
    assert sum(1 for _ in out.open()) == 3 * 20
    assert "wrote" in capsys.readouterr().out
    before = BUNDLED_PATH.stat().st_mtime_ns
    for argv in (["--seed", "1"], ["--test", "5"]):  # without --out these would replace the bundled set
        with pytest.raises(SystemExit, match="would overwrite the bundled"):
            main(["build", *argv])
    assert BUNDLED_PATH.stat().st_mtime_ns == before
