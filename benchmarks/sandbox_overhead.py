"""Sandbox cost: runs per second and overhead per run, against a bare `subprocess.run`.

    python -m benchmarks.sandbox_overhead [--runs 40] [--rounds 3]

The same solution (read two integers, print their sum) runs as a bare
`subprocess.run([python, -I, -S, solution.py])` and through `agon_env.sandbox`, in the
same process and interleaved in rounds, so machine load hits both alike; each cell is
the median over rounds. "1 test" is one program with one test; "10 tests" is one program
with ten tests (bare: ten subprocess runs). Sequential rows use one worker; parallel rows
use one per core for both. Cold start is the first run of a fresh sandbox, which starts
its supervisor (and namespaces) before the test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from agon_env.sandbox import Sandbox, SandboxConfig, _base_python, namespaces_available
from benchmarks.report import require_positive, write_report

CODE = "a, b = map(int, input().split())\nprint(a + b)\n"
TEST = {"input": "20 22\n", "output": "42\n"}


def bare_runner(path: str):
    def run(n_tests: int) -> None:
        for _ in range(n_tests):
            out = subprocess.run([_base_python(), "-I", "-S", path], input=TEST["input"], capture_output=True,
                                 text=True, timeout=10).stdout
            assert out.split() == TEST["output"].split(), out

    return run


def sandbox_runner(sb: Sandbox):
    def run(n_tests: int) -> None:
        r = sb.run(CODE, [TEST] * n_tests)
        assert r.verdict == "passed", r

    return run


def timed(run, n_tests: int, runs: int, workers: int) -> float:
    """Seconds per program over `runs` programs, `workers` at a time."""
    t0 = time.perf_counter()
    if workers == 1:
        for _ in range(runs):
            run(n_tests)
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda _: run(n_tests), range(runs)))
    return (time.perf_counter() - t0) / runs


def runner_label(name: str) -> str:
    """A row's runner: its name less the worker count (" w1", " w16"), which the workers column gives."""
    return name.rsplit(" w", 1)[0] if name.startswith("sandbox") else name


def cold_start(isolation: str) -> float:
    sb = Sandbox(SandboxConfig(isolation=isolation, workers=1))
    t0 = time.perf_counter()
    sandbox_runner(sb)(1)
    dt = time.perf_counter() - t0
    sb.close()
    return dt


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=40, help="programs per cell per round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; cells report the median")
    args = ap.parse_args(argv)
    require_positive(args, ("runs", "rounds"))
    cores = os.cpu_count() or 1
    isolations = (["namespace"] if namespaces_available() else []) + ["process"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "solution.py")
        with open(path, "w") as f:
            f.write(CODE)
        runners = {"bare subprocess.run": bare_runner(path)}
        sandboxes = []
        for iso in isolations:
            for workers in (1, cores):
                sb = Sandbox(SandboxConfig(isolation=iso, workers=workers))
                sandboxes.append(sb)
                sandbox_runner(sb)(1)  # warm: start the supervisors outside the timing
                runners[f"sandbox {iso} w{workers}"] = sandbox_runner(sb)
        cells: dict[tuple[str, int, int], list[float]] = {}
        for _ in range(args.rounds):
            for n_tests in (1, 10):
                for workers in sorted({1, cores}):
                    for name, run in runners.items():
                        if name.startswith("sandbox") and not name.endswith(f"w{workers}"):
                            continue
                        runs = args.runs if n_tests == 1 else max(4, args.runs // 5)
                        cells.setdefault((name, n_tests, workers), []).append(timed(run, n_tests, runs, workers))
        for sb in sandboxes:
            sb.close()
    rows = []
    for (name, n_tests, workers), times in cells.items():
        sec = statistics.median(times)
        bare = statistics.median(cells[("bare subprocess.run", n_tests, workers)])
        rows.append({"runner": runner_label(name), "tests/program": n_tests,
                     "workers": workers, "programs/s": 1 / sec, "tests/s": n_tests / sec,
                     "ms/program": 1000 * sec, "overhead ms/program": 1000 * (sec - bare)})
    rows.sort(key=lambda r: (r["tests/program"], r["workers"], r["runner"] != "bare subprocess.run", r["runner"]))
    colds = {iso: cold_start(iso) for iso in isolations}
    notes = ["cold start (first program of a fresh sandbox, supervisor start included): "
             + ", ".join(f"{iso} {1000 * t:.0f} ms" for iso, t in colds.items()),
             "overhead = sandbox ms/program minus bare ms/program in the same cell; "
             f"median of {args.rounds} interleaved rounds",
             "the machine may be shared: compare rows within this file, not across machines"]
    write_report("sandbox_overhead", "Sandbox throughput and overhead vs bare subprocess.run", rows, notes,
                 extra={"cold_start_s": colds, "runs": args.runs, "rounds": args.rounds})


if __name__ == "__main__":
    main()
