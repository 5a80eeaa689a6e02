"""The procedural arith set: determinism, disjoint splits, the summary channel, grading."""

import ast
import random
import re
from collections import Counter
from fractions import Fraction

import pytest

from agon_env.grading import MathGrader
from agon_env.rules import extract_answer, format_ok, summarize
from problems import generate_arith, load
from problems.arith import FAMILIES, SAMPLERS, TIERS, work, wrong_work
from problems.generate import BUNDLED_PATH, BUNDLED_SIZES, normalise
from problems.record import write_jsonl

NUMBER = re.compile(r"\d+(?:/\d+)?")


@pytest.fixture(scope="module")
def bundled():
    return load("arith")


def _eval(expr: str) -> Fraction:
    """Evaluate + - * / on integers exactly (no eval of arbitrary code)."""
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return Fraction(n.value)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.BinOp) and type(n.op) in ops:
            return ops[type(n.op)](ev(n.left), ev(n.right))
        raise ValueError(f"not plain arithmetic: {expr!r}")

    return ev(ast.parse(expr, mode="eval").body)


def test_deterministic_by_seed():
    sizes = {"test": 40, "validation": 30, "train": 50}
    a, b = generate_arith(sizes, seed=7), generate_arith(sizes, seed=7)
    assert [p.to_dict() for p in a] == [p.to_dict() for p in b]
    c = generate_arith(sizes, seed=8)
    assert {p.question for p in a} != {p.question for p in c}


def test_held_out_splits_do_not_move_when_train_grows():
    small = generate_arith({"test": 30, "validation": 20, "train": 10}, seed=3)
    big = generate_arith({"test": 30, "validation": 20, "train": 500}, seed=3)
    held = lambda ps: [p.to_dict() for p in ps if p.split != "train"]  # noqa: E731
    assert held(small) == held(big)


def test_bundled_file_is_the_seeded_generation(tmp_path, bundled):
    fresh = write_jsonl(generate_arith(), tmp_path / "arith.jsonl")
    assert fresh.read_bytes() == BUNDLED_PATH.read_bytes(), "bundled arith.jsonl is stale: run python -m problems build"
    assert BUNDLED_PATH.stat().st_size < 3_000_000


def test_bundled_splits_tiers_and_sizes(bundled):
    counts = Counter((p.split, p.metadata["tier"], p.difficulty) for p in bundled)
    for tier, (difficulty, _) in TIERS.items():
        for split, n in BUNDLED_SIZES.items():
            assert counts[(split, tier, float(difficulty))] == n
    assert len(load("arith", split="test", tier="hard")) >= 300
    assert len(load("arith", split="validation", difficulty=3)) >= 300
    fams = Counter((p.metadata["tier"], p.metadata["family"]) for p in bundled)
    for tier, (_, families) in TIERS.items():
        shares = [fams[(tier, f)] for f in families]
        assert max(shares) - min(shares) <= len(BUNDLED_SIZES), (tier, shares)


def test_splits_never_share_a_question(bundled):
    keys = [normalise(p.question) for p in bundled]
    assert len(keys) == len(set(keys))
    by_split = {s: {normalise(p.question) for p in bundled if p.split == s} for s in BUNDLED_SIZES}
    assert not by_split["train"] & by_split["test"]
    assert not by_split["train"] & by_split["validation"]
    assert not by_split["validation"] & by_split["test"]
    assert len({p.id for p in bundled}) == len(bundled)


def test_exclude_keeps_extra_training_data_off_the_held_out_sets(bundled):
    held = [p.question for p in bundled if p.split != "train"]
    extra = generate_arith(600, seed=1, exclude=held)
    assert {p.split for p in extra} == {None}
    assert not {normalise(p.question) for p in extra} & {normalise(q) for q in held}
    with pytest.raises(ValueError, match="exhausted"):
        generate_arith(20_000, seed=2, tiers=["easy"])  # only ~12k distinct 2-digit add/sub questions


def test_extra_pool_caps_are_the_documented_ones(bundled):
    """The package docstring and README: a pool tops out near 5,000 easy and 2,500 hard per tier."""
    held = [p.question for p in bundled if p.split != "train"]
    for tier, fits, too_many in (("easy", 5000, 6000), ("hard", 2500, 3000)):
        assert len(generate_arith(fits, seed=1, tiers=[tier], exclude=held)) == fits
        with pytest.raises(ValueError, match="exhausted"):
            generate_arith(too_many, seed=1, tiers=[tier], exclude=held)


def test_lengths_and_answer_forms(bundled):
    for p in bundled:
        assert len(p.question) <= 40 and len(p.solution) <= 120, p
        assert re.fullmatch(r"-?\d+(/\d+)?", p.answer), p
        if "/" in p.answer:
            f = Fraction(p.answer)
            assert f.denominator > 1 and p.answer == f"{f.numerator}/{f.denominator}", p
    assert max(len(p.solution) for p in bundled if p.metadata["tier"] == "hard") <= 120


def test_summary_never_states_the_answer(bundled):
    """No result in the summary, and no number it adds to the question, equals the answer."""
    for p in bundled:
        summary = summarize(p.solution)
        assert summary and "<answer>" not in summary and "<think>" not in summary
        given = set(NUMBER.findall(p.question))
        new = [t for t in NUMBER.findall(summary) if t not in given]
        results = [r.split(",")[0] for r in summary.split("=")[1:]]
        assert all(Fraction(t) != abs(Fraction(p.answer)) for t in new), (p.question, summary, p.answer)
        assert all(Fraction(r) != Fraction(p.answer) for r in results), (p.question, summary, p.answer)


def test_summary_claims_are_true_and_stop_short_of_the_answer(bundled):
    """A correct draft's summary states true intermediates, and the answer needs one more step."""
    for p in bundled:
        summary = summarize(p.solution)
        claims = [c.strip() for c in re.split(r",", summary)]
        for claim in claims:
            if claim.startswith("den "):
                continue
            lhs, rhs = claim.split("=")
            if lhs.endswith("x"):  # kx=r: true iff the answer solves it
                assert int(lhs[:-1]) * Fraction(p.answer) == int(rhs), (p.question, summary)
            else:
                assert _eval(lhs) == _eval(rhs), (p.question, summary)
            assert _eval(rhs) != Fraction(p.answer), (p.question, summary)


def test_every_reference_grades_correct_and_a_perturbed_answer_wrong(bundled):
    """≥1,000 per tier through the env's MathGrader (exact fast path: no worker starts)."""
    grader = MathGrader(workers=1)
    per_tier = Counter()
    for p in bundled:
        v = grader.grade(p, p.solution)
        assert v.correct and v.formatted and v.answer == p.answer, (p, v)
        f = Fraction(p.answer)
        wrong = str(f + 1) if f.denominator == 1 else f"{f.numerator + 1}/{f.denominator}"
        assert not grader.grade(p, f"<answer>{wrong}</answer>").correct, (p, wrong)
        per_tier[p.metadata["tier"]] += 1
    assert grader._pool is None, "some arith answer missed the exact fast path"
    assert min(per_tier.values()) >= 1000 and set(per_tier) == set(TIERS)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_wrong_work_is_consistently_wrong(family):
    rng = random.Random(family)
    for visible in (True, False, None):
        missing = 0
        for _ in range(100):
            ops = SAMPLERS[family](rng)
            right, wrong = work(family, ops), wrong_work(family, ops, rng, visible=visible)
            if wrong is None:  # no single slip changes this instance's answer
                missing += 1
                continue
            assert wrong.question == right.question
            assert Fraction(wrong.answer) != Fraction(right.answer)
            assert extract_answer(wrong.solution) == wrong.answer and format_ok(wrong.solution)
            assert len(wrong.solution) <= 130
            if visible is not None:
                assert (wrong.summary != right.summary) == visible, (right.solution, wrong.solution)
        # ~4% for the linear families (a slip of ±1 in kx=r rounds back to x), 0 elsewhere
        assert missing <= 10, f"{family} visible={visible}: {missing}/100 instances without a wrong draft"
