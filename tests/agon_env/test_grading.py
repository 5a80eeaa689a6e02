import asyncio
import threading
import time

import pytest

from agon_env.grading import MathGrader
from problems.record import Problem


@pytest.fixture(scope="module")
def grader():
    g = MathGrader(workers=2, timeout=3.0, max_answer_chars=20000)
    yield g
    g.close()


def P(answer):
    return Problem(id="t", question="q", answer=answer)


@pytest.mark.parametrize("gold, completion, ok", [
    ("3/4", "<answer>0.75</answer>", True),
    ("3/4", "<answer>6/8</answer>", True),
    ("\\frac{1}{2}", "<answer>$\\frac{2}{4}$</answer>", True),
    ("1/3", "<answer>0.333333</answer>", False),  # float_rounding=10: no 6-decimal pass
    ("x^2+2x", "<answer>x(x+2)</answer>", True),
    ("2\\sqrt{2}", "<answer>\\sqrt{8}</answer>", True),
    ("7", "<think>try 7</think>so<answer>\\boxed{7}</answer>", True),
    ("7", "<answer>8</answer>", False),
    ("1,000", "<answer>1000</answer>", True),
    ("42", "<think>the gold 42 appears here</think> but no answer tag", False),  # no stray-number credit
    ("-5", "<answer>-5</answer>", True),
])
def test_equivalence(grader, gold, completion, ok):
    assert grader.grade(P(gold), completion).correct is ok


def test_batch_matches_single(grader):
    cases = [("3/4", "<answer>0.75</answer>"), ("x+1", "<answer>1+x</answer>"), ("2", "<answer>3</answer>")]
    batch = grader.grade_batch([P(g) for g, _ in cases], [c for _, c in cases])
    assert [v.correct for v in batch] == [grader.grade(P(g), c).correct for g, c in cases] == [True, True, False]


HOSTILE = [
    "<answer>" + "\\frac{" * 300 + "1" + "}{2}" * 300 + "</answer>",  # deep nesting
    "<answer>" + "(" * 800 + "1" + ")" * 800 + "</answer>",
    "<answer>2^{2^{2^{2^{2^{2^{2^{2}}}}}}}</answer>",  # huge power
    "<answer>" + "9" * 19000 + "</answer>",  # long digit string
    "x" * 2_000_000,  # 2 MB, no answer
    "<answer>" + "1" * 2_000_000 + "</answer>",  # 2 MB answer: too long, not parsed
]


def test_hostile_input_from_a_thread_is_wrong_within_bound(grader):
    out = []

    def run():
        for text in HOSTILE:
            t = time.monotonic()
            v = grader.grade(P("1"), text)
            out.append((v, time.monotonic() - t))

    th = threading.Thread(target=run)
    th.start()
    th.join(timeout=60)
    assert not th.is_alive()
    assert len(out) == len(HOSTILE)
    for v, dt in out:
        assert not v.correct
        assert dt < grader.timeout + 2.0, (v.verdict, dt)
    assert grader.grade(P("3/4"), "<answer>\\frac{3}{4}</answer>").correct  # still works afterwards


def test_works_from_asyncio(grader):
    async def main():
        return await asyncio.to_thread(grader.grade, P("0.5"), "<answer>\\frac12</answer>")
    assert asyncio.run(main()).correct
