"""The game on code: program extraction, the code grader, what the challenger is shown,
and a full episode of `agon_env.env(domain="code")` with the sandbox grading it."""

import re

import pytest

import agon_env
from agon_env.code_grader import CODE_VERDICTS, CodeGrader, extract_code
from agon_env.game import AgonGame
from agon_env.grading import default_grader
from agon_env.rules import summarize, withhold_code
from agon_env.sandbox import SandboxConfig
from problems.code import load_code_easy
from problems.record import Problem


def fenced(code, lang="python"):
    return f"<answer>\n```{lang}\n{code}\n```\n</answer>"


@pytest.fixture(scope="module")
def grader():
    g = CodeGrader(SandboxConfig(timeout=1.0, workers=2))
    yield g
    g.close()


@pytest.fixture(scope="module")
def easy():
    return {p.id.split("/")[1]: p for p in load_code_easy()}


@pytest.mark.parametrize("completion, code", [
    (fenced("print(1)"), "print(1)"),
    (fenced("print(1)", lang=""), "print(1)"),
    ("<answer>print(2)</answer>", "print(2)"),
    ("<answer>```python\nx = 1\nprint(x)</answer>", "x = 1\nprint(x)"),  # unclosed fence
    ("<answer>sketch\n```py\nprint(1)\n```\nfinal:\n```python\nprint(2)\n```</answer>", "print(2)"),
    ("```python\nprint(1)\n```", None),  # a program outside the answer block is not graded
    ("<answer>```python\n```</answer>", None),
    ("\\boxed{print(1)}", None),  # a box is a math answer, never a program
    ("<think>first try <answer>print(1)</answer></think>", None),  # an answer in the thinking is reasoning
])
def test_extract_code(completion, code):
    assert extract_code(completion) == code


def test_withhold_code_keeps_the_approach_and_drops_every_program():
    draft = ("<think>try brute force first</think>Sort, then sweep with two pointers.\n"
             "```python\nprint(42)\n```\nUse `i` and `j` as the pointers.\n" + fenced("print(42)"))
    shown = summarize(draft, domain="code")
    assert "Sort, then sweep" in shown and "`i`" in shown
    assert "print(42)" not in shown and "brute force" not in shown and "```" not in shown
    assert withhold_code("idea\n```python\nprint(1)") == "idea\n"  # an unclosed fence runs to the end


def test_every_bundled_solution_passes(grader):
    problems = load_code_easy()
    verdicts = grader.grade_batch(problems, [p.solution for p in problems])
    assert [v.verdict for v in verdicts] == ["passed"] * len(problems)
    assert all(v.correct and v.formatted and v.pass_fraction == 1.0 for v in verdicts)
    assert {p.metadata["kind"] for p in problems} == {"stdin", "call"}


def test_code_grader_verdicts(grader, easy):
    p = easy["digit_spread"]
    completions = ["no answer here", fenced("x" * 200_000), fenced("print(0)"), fenced("while True: pass"),
                   fenced("import ctypes\nctypes.string_at(0)"), p.solution]
    verdicts = grader.grade_batch([p] * len(completions), completions)
    assert [v.verdict for v in verdicts] == ["no_answer", "too_long", "wrong_answer", "timeout", "runtime_error",
                                             "passed"]
    assert {v.verdict for v in verdicts} <= set(CODE_VERDICTS)
    assert (verdicts[2].correct, verdicts[2].pass_fraction) == (False, 0.4)  # right only where all digits are equal
    with pytest.raises(ValueError, match="needs a code problem"):
        grader.grade(Problem(id="m", question="1+1?", answer="2"), fenced("print(2)"))


def test_a_boxed_only_code_completion_is_no_answer(grader, easy):
    """The game's default answer_format (tags_or_boxed) would read this box; the code grader reads tags only."""
    from agon_env.rules import extract_answer

    p = easy["digit_spread"]
    program = extract_code(p.solution)
    boxed = f"<think>read, then max - min</think>Done.\n\\boxed{{{program}}}"
    assert extract_answer(boxed) == program  # a right program, in a box
    v = grader.grade(p, boxed)
    assert (v.verdict, v.correct, v.formatted) == ("no_answer", False, False)


def test_problem_limits_are_used():
    # Margins are wide because CI machines stall: the problem's 1 s limit must cut a 2.5 s nap
    # but not Python's start-up, and the hog asks for 400 MiB of address space (RLIMIT_AS) with
    # bytes(), which does not touch the pages (bytearray() zero-fills them: 2 s on a slow CI run).
    p = Problem(id="slow", question="q", domain="code", tests=[{"input": "", "output": "1"}],
                metadata={"time_limit": 1.0, "memory_limit_bytes": 256 * 2**20})
    nap = fenced("import time\ntime.sleep(2.5)\nprint(1)")
    hog = fenced("x = bytes(400 * 2**20)\nprint(1)")
    plain = CodeGrader(SandboxConfig(timeout=10.0, memory_mb=1024))
    contest = CodeGrader(SandboxConfig(timeout=10.0, memory_mb=1024), use_problem_limits=True, min_memory_mb=256)
    assert [plain.grade(p, c).verdict for c in (nap, hog)] == ["passed", "passed"]
    assert [contest.grade(p, c).verdict for c in (nap, hog)] == ["timeout", "memory"]
    plain.close()
    contest.close()


@pytest.mark.parametrize("metadata, msg", [
    ({"time_limit": "2s"}, "problem 'limits': metadata['time_limit'] must be a positive number, got '2s'"),
    ({"time_limit": -1}, "problem 'limits': metadata['time_limit'] must be a positive number, got -1"),
    ({"memory_limit_bytes": "lots"}, "problem 'limits': metadata['memory_limit_bytes'] must be a positive number, got 'lots'"),
    ({"time_limit": True}, "problem 'limits': metadata['time_limit'] must be a positive number, got True"),
])
def test_bad_problem_limits_are_named(metadata, msg):
    p = Problem(id="limits", question="q", domain="code", tests=[{"input": "", "output": "1"}], metadata=metadata)
    g = CodeGrader(use_problem_limits=True)
    try:
        with pytest.raises(ValueError, match=re.escape(msg)):
            g.grade_batch([p], [fenced("print(1)")])
        assert all(s.proc is None for s in g.sandbox._all)  # raised before any program ran
    finally:
        g.close()


def test_registered_as_the_default_code_grader(easy):
    p = easy["vowel_shift"]
    assert default_grader().grade(p, p.solution).verdict == "passed"


def test_a_code_episode_pays_the_conversion_bonus(easy):
    """A wrong draft, then a challenger that reads its approach and solves it: c(a)=0, c(b)=1."""
    p = easy["clock_add"]
    e = agon_env.env(domain="code", problems=[p])
    e.reset(seed=0)
    drafter = e.agent_selection
    draft = ("<think>minutes mod 1440</think>Convert to minutes, add m, reduce mod 1440, format HH:MM.\n"
             + fenced("h, m = map(int, input().split(':'))\nprint(h, m)"))
    e.step(draft)
    challenger = e.agent_selection
    shown = e.observe(challenger)["summary"]
    assert "reduce mod 1440" in shown and "print(h, m)" not in shown
    e.step(p.solution)
    ra, rb = e.rewards[drafter], e.rewards[challenger]
    assert e.infos[drafter]["verdict"] == "wrong_answer" and e.infos[challenger]["verdict"] == "passed"
    assert (ra, rb) == (0.5, 3.5)  # drafter: λφ; challenger: 2 + conversion 1 + λφ
    assert e.infos[challenger]["pass_fraction"] == 1.0


def test_the_learners_game_object_on_code(easy):
    """What agon_grpo/grpo call: prompts, summaries and scores through AgonGame(domain="code")."""
    p = easy["even_minus_odd"]
    game = AgonGame(domain="code")
    draft = "<think>t</think>Signed sum by parity.\n```python\nprint(0)\n```\n" + fenced("print(0)")
    (prompt,) = game.challenger_prompts([p], [draft])
    assert "Signed sum by parity." in prompt and "print(0)" not in prompt
    (res,) = game.score([p], [draft], [p.solution])
    assert res.converted and res.challenger_info["pass_fraction"] == 1.0
    rewards, verdicts = game.grade_solo([p, p], [draft, p.solution])
    assert rewards == [0.5, 2.5] and [v.verdict for v in verdicts] == ["wrong_answer", "passed"]
