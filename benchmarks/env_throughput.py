"""Env speed: agon_env steps against PettingZoo's tictactoe_v3, and grading throughput.

    python -m benchmarks.env_throughput [--seconds 3] [--answers 400]

Both envs run the standard agent loop (`agent_iter`, `last`, `step`) through their
`env()` wrappers. agon_env uses an exact-match grader so only the env's own overhead
is timed. Grading throughput uses math-verify on answers that miss the exact fast path,
once with one worker process and once with one per core.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from pettingzoo.classic import tictactoe_v3

import agon_env
from agon_env.grading import ExactMatchGrader, MathGrader
from benchmarks.report import require_positive, write_report
from problems.record import Problem

DRAFT = ("<think>" + "Work it out carefully. " * 20 + "</think>"
         "I combined the tens and then the ones.\n<answer>{}</answer>")


def time_loop(env, choose, seconds: float) -> tuple[int, int, float]:
    """Run whole episodes for about `seconds`; returns (steps, episodes, elapsed)."""
    steps = episodes = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        env.reset(seed=episodes)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else choose(obs, agent))
            steps += 1
        episodes += 1
    return steps, episodes, time.perf_counter() - t0


def bench_envs(seconds: float) -> list[dict]:
    rng = np.random.default_rng(0)
    problems = [Problem(id=str(i), question=f"What is {i} + {i + 7}?", answer=str(2 * i + 7)) for i in range(200)]
    agon = agon_env.env(problems=problems, grader=ExactMatchGrader())
    answers = {p.question: p.answer for p in problems}
    agon_choice = lambda obs, agent: DRAFT.format(answers[obs["problem"]] if rng.random() < 0.5 else "0")  # noqa: E731
    ttt = tictactoe_v3.env()
    ttt_choice = lambda obs, agent: int(rng.choice(np.flatnonzero(obs["action_mask"])))  # noqa: E731
    rows = []
    for name, env, choose in (("agon_env (exact grader)", agon, agon_choice), ("tictactoe_v3", ttt, ttt_choice)):
        time_loop(env, choose, 0.3)  # warm-up
        steps, eps, dt = time_loop(env, choose, seconds)
        rows.append({"env": name, "steps/s": steps / dt, "episodes/s": eps / dt, "us/step": 1e6 * dt / steps})
    rows[0]["step cost vs tictactoe"] = rows[0]["us/step"] / rows[1]["us/step"]
    rows[1]["step cost vs tictactoe"] = 1.0
    return rows


def latex_cases(n: int) -> tuple[list[Problem], list[str]]:
    """Answers that need math-verify: LaTeX and algebra, half right, half wrong."""
    probs, comps = [], []
    for i in range(n):
        a, b = i % 17 + 1, i % 13 + 2
        gold = f"\\frac{{{a}}}{{{b}}}+x"
        pred = f"x+\\frac{{{2 * a}}}{{{2 * b}}}" if i % 2 == 0 else f"x+\\frac{{{a + 1}}}{{{b}}}"
        probs.append(Problem(id=str(i), question="q", answer=gold))
        comps.append(f"<think>...</think>Summary.<answer>{pred}</answer>")
    return probs, comps


def bench_grading(n: int) -> list[dict]:
    probs, comps = latex_cases(n)
    rows = []
    for workers in (1, os.cpu_count() or 1):
        g = MathGrader(workers=workers)
        g.grade_batch(probs[:workers * 4], comps[:workers * 4])  # start workers, import math-verify
        t0 = time.perf_counter()
        verdicts = g.grade_batch(probs, comps)
        dt = time.perf_counter() - t0
        g.close()
        assert sum(v.correct for v in verdicts) == (n + 1) // 2, "grader disagrees with the constructed cases"
        rows.append({"grader": f"MathGrader, {workers} worker process(es)", "answers/s": n / dt})
    for r in rows:
        r["speed-up vs 1 process"] = r["answers/s"] / rows[0]["answers/s"]
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="timing window per env")
    ap.add_argument("--answers", type=int, default=400, help="answers graded per grading configuration")
    args = ap.parse_args(argv)
    if args.seconds <= 0:  # an empty timing window divides by zero steps
        raise SystemExit(f"error: --seconds must be positive, got {args.seconds}")
    require_positive(args, ("answers",))
    env_rows = bench_envs(args.seconds)
    grade_rows = bench_grading(args.answers)
    ratio, speedup = env_rows[0]["step cost vs tictactoe"], grade_rows[-1]["speed-up vs 1 process"]
    write_report("env_throughput", "agon_env step cost vs tictactoe_v3", env_rows, [
        f"target: agon step cost / tictactoe step cost <= 1.0 -> {ratio:.2f} ({'met' if ratio <= 1.0 else 'NOT met'})",
        "agon episode = 2 steps + 2 dead steps; drafts are ~500 characters.",
    ])
    write_report("grading_throughput", "Batched math-verify grading throughput", grade_rows, [
        f"target: >= 1.7x one process on 2 cores -> {speedup:.2f}x ({'met' if speedup >= 1.7 else 'NOT met'})",
        "Each answer is LaTeX that misses the exact fast path, so every one runs math-verify.",
    ], command="python -m benchmarks.env_throughput")


if __name__ == "__main__":
    main()
