"""Steps per second of the discrete Agon variant against PettingZoo's tictactoe_v3, in one run.

    python -m benchmarks.discrete_throughput [--seconds 3]

Each env is driven by the same AEC loop with uniform random legal actions, so the figure
is env cost plus the loop, as a user's own algorithm would see it. Writes
benchmarks/results/discrete_throughput.{json,md}.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from pettingzoo.classic import tictactoe_v3

from agon_env import discrete
from benchmarks.report import write_report


def steps_per_second(make, seconds: float, seed: int = 0) -> tuple[float, float]:
    """(agent steps/s, episodes/s) of random play on a fresh env for about `seconds`."""
    e, rng = make(), np.random.default_rng(seed)
    e.reset(seed=seed)
    steps = episodes = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for agent in e.agent_iter():
            obs, _, term, trunc, _ = e.last()
            if term or trunc:
                action = None
            else:
                mask = obs["action_mask"] if isinstance(obs, dict) else None
                action = int(rng.choice(np.flatnonzero(mask))) if mask is not None else int(rng.integers(e.action_space(agent).n))
            e.step(action)
            steps += 1
        episodes += 1
        e.reset()
    elapsed = time.perf_counter() - start
    return steps / elapsed, episodes / elapsed


def main(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds of play per env")
    args = parser.parse_args(argv)
    if args.seconds <= 0:  # no play at all: the table would be all zeros
        raise SystemExit(f"error: --seconds must be positive, got {args.seconds}")
    envs = {
        "agon discrete, env() (wrapped)": discrete.env,
        "agon discrete, raw_env()": discrete.raw_env,
        "tictactoe_v3.env() (wrapped)": tictactoe_v3.env,
        "tictactoe_v3.raw_env()": tictactoe_v3.raw_env,
    }
    rows = []
    for name, make in envs.items():
        sps, eps = steps_per_second(make, args.seconds)
        rows.append({"env": name, "steps_per_s": round(sps), "episodes_per_s": round(eps)})
    write_report("discrete_throughput", "Discrete Agon vs tictactoe_v3: AEC steps per second", rows, [
        f"uniform random legal actions, {args.seconds:g} s per env",
        "steps include the terminal None steps of the AEC API; tictactoe samples from its action mask "
        "(agon has none), which is part of its cost",
    ])

if __name__ == "__main__":
    main()
