"""Command line: list the sources, show problems, count them per difficulty and split.

    python -m problems list
    python -m problems show arith --n 3 --split test --tier hard
    python -m problems stats arith
    python -m problems stats path/to/deepmath.parquet     # or a .jsonl file or a directory
    python -m problems build                              # regenerate problems/data/arith.jsonl

Bad rows in a file are listed, one ``FILE line N: what was wrong`` each, and the command
exits with status 2; ``--skip-bad`` loads the good rows and prints how many it skipped.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import Counter
from pathlib import Path

from .arith import TIERS
from .deepmath import HARD_DIFFICULTY, is_binary, is_deepmath_path, read_deepmath
from .generate import BUNDLED_PATH, BUNDLED_SEED, BUNDLED_SIZES, SPLIT_ORDER, generate_arith
from .record import SPLITS, Problem, write_jsonl
from .rows import DataError, SkippedRows
from .sources import SOURCES, load


def _problems(args) -> list[Problem]:
    """The problems NAME names; a data or usage error is printed (every bad row) and exits 2."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SkippedRows)
            problems = _read(args)
    except DataError as e:
        n = len(e.errors)
        print(f"error: {n} bad row{'s' * (n != 1)}:", *str(e).splitlines(), sep="\n  ", file=sys.stderr)
        print("fix them, or pass --skip-bad to load the good rows", file=sys.stderr)
        raise SystemExit(2) from None
    except (ValueError, TypeError, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return problems


def _read(args) -> list[Problem]:
    """DeepMath is read whole (every difficulty, no split), so stats can show what the hard
    split keeps and drops."""
    if args.name == "deepmath":
        if not args.path:
            raise ValueError("source 'deepmath' needs --path (a parquet/JSONL file or directory)")
        return read_deepmath(args.path, skip_bad=args.skip_bad)
    if is_deepmath_path(args.name):
        return read_deepmath(args.name, skip_bad=args.skip_bad)
    options = {"path": args.path} if args.path else {}
    if args.name == "reasoning_gym":
        options = {"task": args.task, "n": args.n}
    return load(args.name, split=args.split, tier=args.tier, skip_bad=args.skip_bad, **options)


def cmd_list(args) -> None:
    for name, (_, about) in SOURCES.items():
        print(f"{name:14s} {about}")
    print(f"{'PATH':14s} a Problem .jsonl file, or a DeepMath parquet/JSONL file or directory")


def visible_part(solution: str) -> str | None:
    """The text between `</think>` and `<answer>` of a worked solution written in the
    completion layout the arith families use (`<think>STEPS</think>SUMMARY<answer>A</answer>`):
    the part a challenger reading this solution as a draft would see. None for a solution in
    any other layout (DeepMath's prose, code sets' programs). A local slice, not the game's
    summary channel, so `problems` does not import `agon_env`."""
    head, sep, rest = solution.partition("</think>")
    if not sep or "<think>" in rest or "<answer>" not in rest:
        return None
    return rest.rpartition("<answer>")[0].strip()


def cmd_show(args) -> None:
    for p in _problems(args)[:args.n]:
        tier = p.metadata.get("tier", "")
        print(f"[{p.id}] split={p.split} difficulty={p.difficulty:g} {tier}".rstrip())
        print(f"  Q: {p.question}")
        print(f"  answer: {p.answer}")
        if p.solution:
            print(f"  solution: {p.solution}")
            visible = visible_part(p.solution)
            if visible is not None:
                print(f"  visible part (between </think> and <answer>): {visible}")


def cmd_stats(args) -> None:
    problems = _problems(args)
    counts = Counter((p.split, p.difficulty) for p in problems)
    difficulties = sorted({d for _, d in counts})
    splits = [s for s in (*SPLITS, None) if any(k[0] == s for k in counts)]
    print(f"{len(problems)} problems from {args.name}")
    print("difficulty " + "".join(f"{str(s):>11s}" for s in splits) + f"{'total':>11s}")
    for d in difficulties:
        row = [counts[(s, d)] for s in splits]
        tier = next((t for t, (n, _) in TIERS.items() if n == d), "") if args.name == "arith" else ""
        print(f"{d:<10g} " + "".join(f"{c:>11d}" for c in row) + f"{sum(row):>11d}  {tier}")
    if is_deepmath_path(args.name) or args.name == "deepmath":
        at8 = [p for p in problems if p.difficulty == HARD_DIFFICULTY]
        binary = sum(is_binary(p.answer) for p in at8)
        print(f"hard split (difficulty {HARD_DIFFICULTY:g}, binary answers dropped): {len(at8) - binary} "
              f"({binary} binary dropped)")


def cmd_build(args) -> None:
    sizes = {s: getattr(args, s) for s in SPLIT_ORDER}
    if args.out == BUNDLED_PATH and (args.seed != BUNDLED_SEED or sizes != BUNDLED_SIZES):
        # the bundled set is what every test, the tiny pair and every published figure were made on
        raise SystemExit(f"error: another --seed or size would overwrite the bundled {BUNDLED_PATH}; pass --out PATH")
    path = write_jsonl(generate_arith(sizes, seed=args.seed), args.out)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m problems", description="Problem sources for the Agon game.")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the problem sources").set_defaults(fn=cmd_list)
    for name, fn, about in (("show", cmd_show, "print a few problems"),
                            ("stats", cmd_stats, "count problems per difficulty and split")):
        p = sub.add_parser(name, help=about)
        p.add_argument("name", help="a source name (see list), a Problem .jsonl path, or a DeepMath file/directory")
        p.add_argument("--n", type=int, default=3, help="problems to show (reasoning_gym: items to generate)")
        p.add_argument("--split", choices=SPLITS, help="only this split (DeepMath files are read whole, unsplit)")
        p.add_argument("--tier", help="only this tier (metadata['tier'], e.g. hard)")
        p.add_argument("--path", help="the file or directory, for sources that read one (deepmath, code_contests, ...)")
        p.add_argument("--skip-bad", action="store_true", help="load the good rows of a file with bad ones, "
                       "and print how many were skipped (default: list the bad rows and exit 2)")
        p.add_argument("--task", default="basic_arithmetic", help="the task, for NAME=reasoning_gym")
        p.set_defaults(fn=fn)
    b = sub.add_parser("build", help="regenerate the bundled arith set (or another seed/size into --out)")
    b.add_argument("--out", type=Path, default=BUNDLED_PATH, help="where to write the JSONL")
    b.add_argument("--seed", type=int, default=BUNDLED_SEED, help="random seed")
    for split in SPLIT_ORDER:
        b.add_argument(f"--{split}", type=int, default=BUNDLED_SIZES[split], help=f"{split} problems per tier")
    b.set_defaults(fn=cmd_build)
    args = ap.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
