"""Graders: how a completion is judged against a problem.

A grader turns (problem, completion) into a `Verdict`: correctness c, the format term φ,
the parsed answer, the completion length and a verdict word. Grading is the only costly
part of the game, so every grader has `grade_batch`.

`MathGrader` runs math-verify in killable worker processes. math-verify's own timeouts
use SIGALRM, which fails off the main thread, and with them off hostile inputs (huge
digit strings, deep nesting) can run for tens of seconds. Here each call is bounded from
outside: a worker that overruns `timeout` is killed, a warm spare takes its place and a
new spare starts in the background, and the answer is graded wrong with verdict
`timeout`. This works from threads, processes and asyncio, and holds while other work
shares the cores. A forked copy (a fork-based vector env, a multiprocessing pool) starts
its own workers and threads on first use, and never uses or stops the parent's.

Every grader finds the answer as its `answer_format` says (`rules.extract_answer`): the
last `<answer>` block, the last `\\boxed{}`, or (default) the tags, else the box, always
outside the `<think>` reasoning.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import queue
import re
import select
import subprocess
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral, Real
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from .rules import check_answer_format, extract_answer, format_ok

if TYPE_CHECKING:  # pragma: no cover
    from problems.record import Problem

_PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Verdict:
    """How one completion was judged.

    `verdict` is one word: for math `correct`, `wrong`, `no_answer`, `too_long`, `timeout`
    or `error`; the code grader's are in `agon_env.code_grader`.
    """

    correct: bool
    formatted: bool
    answer: str | None
    length: int
    verdict: str
    pass_fraction: float | None = None

    def as_info(self) -> dict:
        return {
            "correct": self.correct, "formatted": self.formatted, "answer": self.answer,
            "length": self.length, "verdict": self.verdict, "pass_fraction": self.pass_fraction,
        }


class Grader(Protocol):
    def grade(self, problem: "Problem", completion: str) -> Verdict: ...
    def grade_batch(self, problems: Sequence["Problem"], completions: Sequence[str]) -> list[Verdict]: ...


class _BatchMixin:
    def grade_batch(self, problems, completions):
        if len(problems) != len(completions):
            raise ValueError(f"grade_batch needs equal lengths, got {len(problems)} and {len(completions)}")
        return [self.grade(p, c) for p, c in zip(problems, completions)]


def _space(m: re.Match) -> str:
    """Whitespace between two digits separates numbers ("1 2" is not 12); elsewhere it is layout."""
    s, i, j = m.string, m.start(), m.end()
    return " " if 0 < i and j < len(s) and s[i - 1].isdigit() and s[j].isdigit() else ""


def _normalise(s: str) -> str:
    s = s.strip().strip("$").strip()
    s = re.sub(r"^\\boxed\{(.*)\}$", r"\1", s)
    if re.fullmatch(r"-?\d{1,3}( \d{3})+", s):  # digit groups: "1 000" is 1000
        s = s.replace(" ", "")
    return re.sub(r"\s+", _space, s).rstrip(".")


def _as_fraction(s: str) -> Fraction | None:
    s = s.replace(",", "") if re.fullmatch(r"-?\d{1,3}(,\d{3})+", s) else s
    if not re.fullmatch(r"-?\d+(\.\d+)?(/-?\d+)?", s) or len(s) > 60:
        return None
    try:
        return Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None


class ExactMatchGrader(_BatchMixin):
    """c = the extracted answer equals the reference after whitespace normalisation (layout
    whitespace dropped; whitespace between digits kept, except in digit groups such as "1 000").

    Cheap and exact: for benchmarks that time the env itself, and for tasks whose
    answers are canonical strings. `answer_format` as in `MathGrader`.
    """

    def __init__(self, answer_format: str = "tags_or_boxed"):
        self.answer_format = check_answer_format(answer_format)

    def grade(self, problem, completion):
        ans = extract_answer(completion, self.answer_format)
        ok = ans is not None and _normalise(ans) == _normalise(problem.answer)
        return Verdict(ok, format_ok(completion), ans, len(completion),
                       "correct" if ok else ("no_answer" if ans is None else "wrong"))


# ---------------------------------------------------------------- math-verify workers
class _Worker:
    """One `agon_env._math_worker` subprocess speaking JSON lines over its pipes.

    A plain subprocess, not multiprocessing: nothing re-imports the user's `__main__`,
    and fork-after-threads (torch) is never an issue.
    """

    def __init__(self, float_rounding: int):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agon_env._math_worker", str(float_rounding)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1, cwd=_PKG_ROOT,
        )

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait out math-verify's import (seconds; never on a grading call's path after the first)."""
        if self._readline(timeout) != '["ready"]\n':
            raise EOFError(f"math worker did not start within {timeout:.0f} s")

    def call(self, gold: str, pred: str, timeout: float) -> str:
        """The worker's verdict, or 'timeout' if none came within `timeout` seconds."""
        self.proc.stdin.write(json.dumps([gold, pred]) + "\n")
        self.proc.stdin.flush()
        line = self._readline(timeout)
        return "timeout" if line is None else json.loads(line)[0]

    def _readline(self, timeout: float) -> str | None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        if not line:
            raise EOFError("math worker exited")
        return line

    def reap(self):
        """Kill the process, wait for it and close its pipes."""
        self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


class MathGrader:
    """math-verify against the reference answer, bounded per call, parallel across workers.

    Args:
        workers: worker processes (default: all cores). One batch uses all of them.
        timeout: seconds allowed per answer; an overrun is killed and graded wrong.
        max_answer_chars: longer extracted answers are graded wrong unparsed (`too_long`).
        float_rounding: decimals math-verify compares floats to (its default, 6, accepts
            0.333333 for 1/3; 10 does not).
        answer_format: how the answer is found: "tags", "boxed" or "tags_or_boxed"
            (see `rules.extract_answer`). φ always requires the tags.
        spares: warm workers kept in reserve. A worker that overran or died is replaced
            by a spare at once, and a new spare starts in the background, so a timed-out
            call returns within `timeout` plus a little even while the cores are busy.
    The exact fast path (equal normalised strings, or equal plain numbers and fractions)
    is decided without a worker. A worker that dies mid-call (killed from outside) is
    replaced and the call retried once on another worker.
    """

    def __init__(self, workers: int | None = None, timeout: float = 5.0, max_answer_chars: int = 1000,
                 float_rounding: int = 10, answer_format: str = "tags_or_boxed", spares: int = 1):
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, Integral) or workers < 1):
            raise ValueError(f"MathGrader workers must be an int >= 1 or None, got {workers!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, Real) or not 0 < timeout < math.inf:
            raise ValueError(f"MathGrader timeout must be a positive number of seconds, got {timeout!r}")
        if isinstance(spares, bool) or not isinstance(spares, Integral) or spares < 0:
            raise ValueError(f"MathGrader spares must be an int >= 0, got {spares!r}")
        self.workers = workers or os.cpu_count() or 1
        self.timeout, self.max_answer_chars, self.float_rounding = timeout, max_answer_chars, float_rounding
        self.answer_format, self.spares = check_answer_format(answer_format), spares
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._reset_workers()
        _graders.add(self)
        atexit.register(self.close)

    def _after_fork(self):
        """In a forked child: the workers, the pool's threads and any held lock are the parent's."""
        self._lock, self._pool = threading.Lock(), None
        self._reset_workers()

    def _reset_workers(self):
        self._idle: queue.Queue[_Worker] = queue.Queue()  # ready workers, for calls
        self._spare: list[_Worker] = []  # ready workers, in reserve
        self._live: set[_Worker] = set()
        self._missing = 0  # call slots waiting for a replacement
        self._failure: str | None = None
        self._generation = getattr(self, "_generation", 0) + 1

    def _start(self):
        with self._lock:
            if self._pool is not None:
                return
            fresh = [_Worker(self.float_rounding) for _ in range(self.workers + self.spares)]
            for w in fresh:  # the first call waits out the imports, in parallel
                w.wait_ready()
            self._live.update(fresh)
            for w in fresh[:self.workers]:
                self._idle.put(w)
            self._spare = fresh[self.workers:]
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="math-grader")

    def _take(self) -> _Worker:
        while True:
            try:
                return self._idle.get(timeout=1.0)
            except queue.Empty:
                if self._failure:
                    raise RuntimeError(f"math-verify workers could not be replaced: {self._failure}") from None

    def _retire(self, w: _Worker):
        """Swap in a spare for `w` now; kill and replace `w` in the background."""
        w.proc.kill()
        with self._lock:
            self._live.discard(w)
            if self._spare:
                self._idle.put(self._spare.pop())
            else:
                self._missing += 1
            generation = self._generation
        threading.Thread(target=self._replace, args=(w, generation), daemon=True, name="math-grader-spare").start()

    def _replace(self, dead: _Worker, generation: int):
        dead.reap()
        for _ in range(3):
            w = _Worker(self.float_rounding)
            try:
                w.wait_ready()
                break
            except (EOFError, OSError) as e:
                w.reap()
                error = str(e)
        else:
            self._failure = error
            return
        with self._lock:
            if generation != self._generation:  # closed meanwhile
                w.reap()
            elif self._missing:
                self._missing -= 1
                self._live.add(w)
                self._idle.put(w)
            else:
                self._live.add(w)
                self._spare.append(w)

    def _verify(self, gold: str, pred: str) -> str:
        for attempt in range(2):
            w = self._take()
            try:
                verdict = w.call(gold, pred, self.timeout)
            except (EOFError, OSError, ValueError):  # the worker died: replace it, retry once
                self._retire(w)
                continue
            if verdict == "timeout":
                self._retire(w)
            else:
                self._idle.put(w)
            return verdict
        return "error"

    def _judge(self, gold: str, completion: str) -> Verdict:
        ans = extract_answer(completion, self.answer_format)
        phi, n = format_ok(completion), len(completion)
        if ans is None:
            return Verdict(False, phi, None, n, "no_answer")
        if len(ans) > self.max_answer_chars:
            return Verdict(False, phi, ans[:100], n, "too_long")
        ga, pa = _normalise(gold), _normalise(ans)
        if ga == pa:
            return Verdict(True, phi, ans, n, "correct")
        fg, fp = _as_fraction(ga), _as_fraction(pa)
        if fg is not None and fp is not None:
            ok = fg == fp
            return Verdict(ok, phi, ans, n, "correct" if ok else "wrong")
        self._start()
        verdict = self._verify(gold, ans)
        return Verdict(verdict == "correct", phi, ans, n, verdict)

    def grade(self, problem, completion):
        return self._judge(problem.answer, completion)

    def grade_batch(self, problems, completions):
        if len(problems) != len(completions):
            raise ValueError(f"grade_batch needs equal lengths, got {len(problems)} and {len(completions)}")
        self._start()
        return list(self._pool.map(lambda pc: self._judge(pc[0].answer, pc[1]), zip(problems, completions)))

    def close(self):
        with self._lock:
            for w in self._live:
                w.reap()
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
            self._reset_workers()

    def __getstate__(self):  # picklable: a copy starts its own workers on first use
        return {"workers": self.workers, "timeout": self.timeout, "max_answer_chars": self.max_answer_chars,
                "float_rounding": self.float_rounding, "answer_format": self.answer_format, "spares": self.spares}

    def __setstate__(self, state):
        self.__init__(**state)


_graders: weakref.WeakSet[MathGrader] = weakref.WeakSet()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: [g._after_fork() for g in list(_graders)])


class DomainGrader:
    """Dispatches each problem to the grader of its `domain` ("math", "code").

    Its `answer_format` is its math grader's (None without one).
    """

    def __init__(self, graders: dict[str, Grader]):
        self.graders = dict(graders)
        self.answer_format = getattr(self.graders.get("math"), "answer_format", None)

    def _for(self, problem) -> Grader:
        try:
            return self.graders[problem.domain]
        except KeyError:
            raise ValueError(
                f"no grader for domain {problem.domain!r} (problem {problem.id!r}); have {sorted(self.graders)}"
            ) from None

    def grade(self, problem, completion):
        return self._for(problem).grade(problem, completion)

    def grade_batch(self, problems, completions):
        if len(problems) != len(completions):
            raise ValueError(f"grade_batch needs equal lengths, got {len(problems)} and {len(completions)}")
        out: list[Verdict | None] = [None] * len(problems)
        by_domain: dict[str, list[int]] = {}
        for i, p in enumerate(problems):
            self._for(p)
            by_domain.setdefault(p.domain, []).append(i)
        for dom, idx in by_domain.items():
            for i, v in zip(idx, self.graders[dom].grade_batch([problems[i] for i in idx], [completions[i] for i in idx])):
                out[i] = v
        return out  # type: ignore[return-value]


_GRADER_FACTORIES: dict[str, Callable[[], Grader]] = {}  # domains other than math, registered by their modules
_others: dict[str, Grader] | None = None
_default: dict[str, DomainGrader] = {}


def register_grader(domain: str, factory: Callable[[], Grader]) -> None:
    """Make `factory()` the default grader for `domain` (the code track registers its sandbox)."""
    global _others
    _GRADER_FACTORIES[domain] = factory
    _others = None
    _default.clear()


def default_grader(answer_format: str = "tags_or_boxed") -> DomainGrader:
    """One shared grader for all domains, so many envs share one worker pool.

    Math answers are read as `answer_format` (one math-verify pool per format); the other
    domains' graders are shared by every format.
    """
    global _others
    if answer_format not in _default:
        math = MathGrader(answer_format=check_answer_format(answer_format))
        if _others is None:
            _others = {d: f() for d, f in _GRADER_FACTORIES.items()}
        _default[answer_format] = DomainGrader({"math": math, **_others})
    return _default[answer_format]
