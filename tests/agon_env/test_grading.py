"""MathGrader: equivalence, boxed answers, the time bound (idle, under load, from threads and
asyncio), workers killed mid-batch, forked copies and bad arguments."""

import asyncio
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from agon_env.grading import ExactMatchGrader, MathGrader
from problems.record import Problem

from .boxed_answers import KNOWN_MISSES, RIGHT, WRONG


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
    ("7", "so \\boxed{8} <answer>7</answer>", True),  # the tags win over a box
    ("12", "<answer>1 2</answer>", False),  # whitespace between digits separates numbers
    ("12", "<answer>1\n2</answer>", False),
    ("1000", "<answer>1 000</answer>", True),  # a digit-group separator
    ("x+1", "<answer>x + 1</answer>", True),
])
def test_equivalence(grader, gold, completion, ok):
    assert grader.grade(P(gold), completion).correct is ok


def test_batch_matches_single(grader):
    cases = [("3/4", "<answer>0.75</answer>"), ("x+1", "<answer>1+x</answer>"), ("2", "<answer>3</answer>")]
    batch = grader.grade_batch([P(g) for g, _ in cases], [c for _, c in cases])
    assert [v.correct for v in batch] == [grader.grade(P(g), c).correct for g, c in cases] == [True, True, False]


def test_boxed_only_answers(grader):
    """Realistic boxed-only completions across answer kinds (see boxed_answers.py)."""
    verdicts = grader.grade_batch([P(g) for g, _ in RIGHT + WRONG], [c for _, c in RIGHT + WRONG])
    right, wrong = verdicts[:len(RIGHT)], verdicts[len(RIGHT):]
    assert [g for (g, _), v in zip(RIGHT, right) if not v.correct] == KNOWN_MISSES  # 59 of 60 accepted
    assert [c for (_, c), v in zip(WRONG, wrong) if v.correct] == []  # 25 of 25 rejected
    assert not any(v.formatted for v in verdicts)  # φ needs the tags


@pytest.mark.parametrize("gold, answer, ok", [
    ("12", "1 2", False), ("12", "1\n2", False), ("12", "1  2", False), ("1 2", "1 2", True),
    ("1000", "1 000", True), ("12345", "12 345", True), ("x+1", " x + 1 ", True), ("\\frac{1}{2}", "\\frac {1} {2}", True),
])
def test_exact_match_keeps_whitespace_between_digits(gold, answer, ok):
    assert ExactMatchGrader().grade(P(gold), f"<answer>{answer}</answer>").correct is ok


@pytest.mark.parametrize("kw, msg", [
    ({"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
    ({"timeout": -1.0}, "timeout must be a positive number of seconds, got -1.0"),
    ({"timeout": float("nan")}, "timeout must be a positive number of seconds, got nan"),
    ({"workers": 0}, "workers must be an int >= 1 or None, got 0"),
    ({"workers": 1.5}, "workers must be an int >= 1 or None, got 1.5"),
    ({"spares": -1}, "spares must be an int >= 0, got -1"),
])
def test_bad_arguments_are_named(kw, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        MathGrader(**kw)


def test_a_forked_child_grades_with_its_own_workers(grader):
    """A fork (a fork-based vector env, a multiprocessing pool) inherits no pool threads and
    must not use, or stop, the parent's workers."""
    batch = [P("x+1")] * 4, ["\\boxed{1+x}"] * 4
    assert all(v.correct for v in grader.grade_batch(*batch))  # every pool thread and worker used in the parent
    parents = set(grader._live)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            v = grader.grade_batch([P("x^2+2x"), P("2")], ["\\boxed{x(x+2)}", "\\boxed{x}"])
            os.write(w, json.dumps([[x.verdict for x in v], [k.proc.pid for k in grader._live]]).encode())
            grader.close()  # the child's own workers only
        finally:
            os._exit(0)
    os.close(w)
    try:
        got = os.read(r, 1000) if select.select([r], [], [], 90)[0] else b""  # b"": no reply in 90 s
    finally:
        os.close(r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    verdicts, child_workers = json.loads(got or b"null") or (None, [])
    assert verdicts == ["correct", "wrong"], got
    assert not {k.proc.pid for k in parents} & set(child_workers)  # the child started its own
    assert set(grader._live) == parents and all(k.proc.poll() is None for k in parents)
    assert all(v.correct for v in grader.grade_batch(*batch))


def test_answer_format_tags_ignores_boxes():
    g = MathGrader(workers=1, answer_format="tags")
    try:
        assert all(v.verdict == "no_answer" for v in g.grade_batch([P(a) for a, _ in RIGHT], [c for _, c in RIGHT]))
    finally:
        g.close()
    assert ExactMatchGrader("boxed").grade(P("7"), "<answer>7</answer>").verdict == "no_answer"


HOSTILE = [
    "So the answer is \\boxed{" + "9" * 19000 + "}",  # long digit string
    "$\\boxed{" + "\\frac{" * 300 + "1" + "}{2}" * 300 + "}$",  # deep nesting
    "\\boxed{" + "(" * 800 + "7" + ")" * 800 + "}",
    "\\boxed{2^{2^{2^{2^{2^{2^{2^{2}}}}}}}}",  # tower of powers
    "\\boxed{" * 300 + "7" + "}" * 300,  # nested boxes
    "<answer>9^{9^{9^{9^{9}}}}</answer>",
]
NOT_GRADED = ["x" * 2_000_000, "<answer>" + "1" * 2_000_000 + "</answer>"]  # no answer; too long to parse


def _spy(grader, monkeypatch):
    """Record which answers reached a math-verify worker."""
    reached, verify = [], grader._verify
    monkeypatch.setattr(grader, "_verify", lambda gold, pred: reached.append(pred) or verify(gold, pred))
    return reached


def test_hostile_input_from_a_thread_is_wrong_within_bound(grader, monkeypatch):
    grader.grade(P("x+1"), "\\boxed{1+x}")  # workers up: the bound is for calls, not for start-up
    reached, out = _spy(grader, monkeypatch), []

    def run():
        for text in HOSTILE + NOT_GRADED:
            t = time.monotonic()
            v = grader.grade(P("1"), text)
            out.append((v, time.monotonic() - t))

    th = threading.Thread(target=run)
    th.start()
    th.join(timeout=90)
    assert not th.is_alive() and len(out) == len(HOSTILE + NOT_GRADED)
    for v, dt in out:
        assert not v.correct
        assert dt < grader.timeout + 1.0, (v.verdict, dt)
    assert len(reached) == len(HOSTILE)  # every hostile answer reached math-verify
    assert [v.verdict for v, _ in out[len(HOSTILE):]] == ["no_answer", "too_long"]
    assert grader.grade(P("3/4"), "<answer>\\frac{3}{4}</answer>").correct  # still works afterwards


def test_hostile_boxed_from_asyncio_within_bound(grader, monkeypatch):
    grader.grade(P("x+1"), "\\boxed{1+x}")
    reached = _spy(grader, monkeypatch)

    async def timed(text):
        t = time.monotonic()
        v = await asyncio.to_thread(grader.grade, P("1"), text)
        return v, time.monotonic() - t

    async def main():
        hostile = await asyncio.gather(*(timed(h) for h in HOSTILE[1:4:2]))  # as many as workers
        return hostile, await asyncio.to_thread(grader.grade, P("0.5"), "\\boxed{\\frac12}")

    hostile, after = asyncio.run(main())
    assert all(not v.correct and dt < grader.timeout + 1.0 for v, dt in hostile), hostile
    assert len(reached) == 3 and after.correct


def test_timeouts_stay_within_bound_while_a_cpu_hog_runs():
    """A killed worker is replaced off the caller's path: a warm spare takes over at once."""
    g = MathGrader(workers=1, timeout=2.0, spares=1)
    hogs = []
    try:
        assert g.grade(P("x+1"), "\\boxed{1+x}").correct  # start-up outside the bound
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
        time.sleep(0.3)
        for text in ("\\boxed{2^{2^{2^{2^{2^{2^{2^{2}}}}}}}}", "\\boxed{9^{9^{9^{9^{9}}}}}"):  # the second needs the spare
            t = time.monotonic()
            v = g.grade(P("1"), text)
            assert v.verdict == "timeout" and time.monotonic() - t < g.timeout + 1.0, (v, time.monotonic() - t)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert g.grade(P("x+1"), "\\boxed{x+1}").correct and g.grade(P("x^2"), "\\boxed{x \\cdot x}").correct
    g.close()


def test_worker_killed_mid_batch_is_replaced_and_the_batch_is_right():
    g = MathGrader(workers=2, timeout=10.0)
    try:
        g.grade(P("x+1"), "\\boxed{1+x}")
        cases = [("x^2+2x", "\\boxed{x(x+2)}", True), ("x^2+2x", "\\boxed{x(x+3)}", False)] * 60
        done, killed, out = [], [], []
        verify = g._verify
        g._verify = lambda gold, pred: done.append(1) or verify(gold, pred)
        th = threading.Thread(target=lambda: out.extend(g.grade_batch([P(a) for a, _, _ in cases], [c for _, c, _ in cases])))
        th.start()
        while len(done) < 20:
            time.sleep(0.01)
        busy = [w for w in g._live if w not in g._spare and w not in g._idle.queue]
        victim = (busy or [w for w in g._live if w not in g._spare])[0]  # one in a call, if caught in one
        os.kill(victim.proc.pid, signal.SIGKILL)
        killed.append(len(done))
        th.join(timeout=120)
        assert killed[0] < len(cases), "the batch ended before the kill"
        assert [v.correct for v in out] == [ok for _, _, ok in cases]
        assert all(v.verdict in ("correct", "wrong") for v in out)
        deadline = time.monotonic() + 60
        while len(g._live) < g.workers + g.spares and time.monotonic() < deadline:
            time.sleep(0.1)
        assert victim not in g._live and len(g._live) == g.workers + g.spares
        assert all(w.proc.poll() is None for w in g._live)
    finally:
        g.close()
