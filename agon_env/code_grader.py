"""The code grader: c = the program in the answer block passes all of the problem's tests.

A code completion keeps the game's format, `<think>…</think>` + summary + `<answer>…</answer>`,
and its answer block holds the program, as one fenced block:

    <answer>
    ```python
    print(sum(map(int, input().split())))
    ```
    </answer>

`extract_code` takes the last fenced block in the answer (any language tag, or none);
an answer without a fence is taken whole as the program. The tests and their schema
are the sandbox's (`agon_env.sandbox`). Verdict words: the sandbox's, plus `no_answer`
(no closed answer block or an empty program) and `too_long` (over `max_code_chars`).
"""

from __future__ import annotations

import math
import re
from typing import Sequence

from .grading import Verdict, register_grader
from .rules import extract_answer, format_ok
from .sandbox import Sandbox, SandboxConfig

CODE_VERDICTS = ("passed", "wrong_answer", "timeout", "memory", "runtime_error", "output_limit",
                 "sandbox_error", "no_answer", "too_long")
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)


def extract_code(completion: str) -> str | None:
    """The program in the completion's last closed `<answer>` block outside the thinking, or None
    if there is none (code is graded with `answer_format="tags"` whatever the game's setting: no
    `\\boxed{}`)."""
    ans = extract_answer(completion, answer_format="tags")  # a box is a math answer, never a program
    if ans is None:
        return None
    blocks = _FENCE.findall(ans)
    code = blocks[-1] if blocks else ans
    if not blocks and ans.startswith("```"):  # an unclosed fence: drop the opening line
        code = ans.split("\n", 1)[1] if "\n" in ans else ""
    return code.strip("\n") or None


def _positive(problem, key: str) -> float | None:
    """`problem.metadata[key]` as a positive number (a numeric string too), None where it is absent."""
    value = problem.metadata.get(key)
    if not value:
        return None
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not 0 < number < math.inf:
        raise ValueError(f"problem {problem.id!r}: metadata[{key!r}] must be a positive number, got {value!r}")
    return number


class CodeGrader:
    """Runs each answer's program in the sandbox against its problem's tests.

    Args:
        config: the sandbox's limits and isolation.
        use_problem_limits: take the time limit from `problem.metadata["time_limit"]`
            (seconds, as the loaders store it) times `time_scale`, and the memory limit
            from `metadata["memory_limit_bytes"]` (never below `min_memory_mb`), where present.
            A value that is not a positive number raises, naming the problem and the field.
        time_scale: multiplier on problem time limits (Python is slower than the C++ that
            contest limits are set for).
        max_code_chars: longer programs are graded wrong without running (`too_long`).
        min_memory_mb: floor on problem memory limits (the interpreter's own address space
            is a few hundred MiB of what a C++ limit assumes is the program's).
    """

    def __init__(self, config: SandboxConfig = SandboxConfig(), use_problem_limits: bool = False,
                 time_scale: float = 1.0, max_code_chars: int = 100_000, min_memory_mb: int = 512):
        self.sandbox = Sandbox(config)
        self.use_problem_limits, self.time_scale, self.max_code_chars = use_problem_limits, time_scale, max_code_chars
        self.min_memory_mb = min_memory_mb

    def _limits(self, problem) -> tuple[float | None, int | None]:
        """(timeout, memory_mb) for this problem; None means the sandbox config's."""
        if not self.use_problem_limits:
            return None, None
        tl, mem = _positive(problem, "time_limit"), _positive(problem, "memory_limit_bytes")
        return (tl * self.time_scale if tl else None,
                max(self.min_memory_mb, int(mem) // 2**20) if mem else None)

    def _precheck(self, problem, completion) -> tuple[str | None, Verdict | None]:
        if problem.domain != "code" or not problem.tests:
            raise ValueError(f"CodeGrader needs a code problem with tests, got domain {problem.domain!r} "
                             f"for problem {problem.id!r}")
        code, phi, n = extract_code(completion), format_ok(completion), len(completion)
        if code is None:
            return None, Verdict(False, phi, None, n, "no_answer", 0.0)
        if len(code) > self.max_code_chars:
            return None, Verdict(False, phi, code[:100], n, "too_long", 0.0)
        return code, None

    def grade(self, problem, completion: str) -> Verdict:
        return self.grade_batch([problem], [completion])[0]

    def grade_batch(self, problems: Sequence, completions: Sequence[str]) -> list[Verdict]:
        """All programs of the batch run in parallel (one sandbox worker per core)."""
        if len(problems) != len(completions):
            raise ValueError(f"grade_batch needs equal lengths, got {len(problems)} and {len(completions)}")
        out: list[Verdict | None] = [None] * len(problems)
        todo: list[tuple[int, str]] = []
        for i, (p, c) in enumerate(zip(problems, completions)):
            code, early = self._precheck(p, c)
            if early is None:
                todo.append((i, code))
            out[i] = early
        runs = self.sandbox.run_batch([(code, problems[i].tests, *self._limits(problems[i])) for i, code in todo])
        for (i, code), run in zip(todo, runs):
            out[i] = Verdict(run.passed, format_ok(completions[i]), code, len(completions[i]), run.verdict,
                             run.pass_fraction)
        return out  # type: ignore[return-value]

    def close(self) -> None:
        self.sandbox.close()


register_grader("code", CodeGrader)
