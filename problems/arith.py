"""The procedural arithmetic families behind the bundled `arith` set.

Each family samples operands and writes one worked solution in the completion format:
`<think>every step</think>SUMMARY<answer>ANSWER</answer>`. The SUMMARY (what the
challenger reads) states the first intermediate result(s) but never the answer, and the
answer needs at least one more real computation from it (see the package docstring).

Every intermediate goes through a `slip(value) -> value` hook. The identity gives the
reference solution; a hook that perturbs one step gives a consistent wrong solution, the
way a tiny model errs (a carry slip early on, with later steps computed from it).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from fractions import Fraction
from math import gcd
from typing import Callable

Slip = Callable[[int], int]


@dataclass(frozen=True)
class Worked:
    """One family instance: the question, its worked-solution parts and the answer."""

    question: str
    think: str
    summary: str
    answer: str

    @property
    def solution(self) -> str:
        return f"<think>{self.think}</think>{self.summary}<answer>{self.answer}</answer>"


def _signed(v: int) -> str:
    """'+5' or '-5': an operand written after another term."""
    return f"+{v}" if v >= 0 else f"-{-v}"


def _divide(n: int, d: int) -> int:
    """n/d as a tiny model would write it: the nearest integer (exact for the reference,
    whose divisions always come out even)."""
    return round(Fraction(n, d))


def _frac(n: int, d: int) -> str:
    f = Fraction(n, d)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


# ---------------------------------------------------------------- easy (tier 1)
def add2(ops, s: Slip) -> Worked:
    """a+b, two 2-digit numbers, split into tens and ones."""
    a, b = ops
    ta, tb, oa, ob = a // 10 * 10, b // 10 * 10, a % 10, b % 10
    t, o = s(ta + tb), s(oa + ob)
    ans = s(t + o)
    return Worked(f"{a}+{b}", f"{ta}+{tb}={t} {oa}+{ob}={o} {t}+{o}={ans}",
                  f"{ta}+{tb}={t}, {oa}+{ob}={o}", str(ans))


def sub2(ops, s: Slip) -> Worked:
    """a-b, two 2-digit numbers with a > b, split into tens and ones (ones may go negative)."""
    a, b = ops
    ta, tb, oa, ob = a // 10 * 10, b // 10 * 10, a % 10, b % 10
    t, o = s(ta - tb), s(oa - ob)
    ans = s(t + o)
    return Worked(f"{a}-{b}", f"{ta}-{tb}={t} {oa}-{ob}={o} {t}{_signed(o)}={ans}",
                  f"{ta}-{tb}={t}, {oa}-{ob}={o}", str(ans))


# ---------------------------------------------------------------- medium (tier 2)
def chain(ops, s: Slip) -> Worked:
    """a±b±c±d, four 2-digit numbers, left to right."""
    a, (o1, b), (o2, c), (o3, d) = ops
    s1 = s(a + o1 * b)
    s2 = s(s1 + o2 * c)
    ans = s(s2 + o3 * d)
    q = f"{a}{_signed(o1 * b)}{_signed(o2 * c)}{_signed(o3 * d)}"
    return Worked(q, f"{a}{_signed(o1 * b)}={s1} {s1}{_signed(o2 * c)}={s2} {s2}{_signed(o3 * d)}={ans}",
                  f"{a}{_signed(o1 * b)}{_signed(o2 * c)}={s2}", str(ans))


def sum_times(ops, s: Slip) -> Worked:
    """(a+b)*c: a 2-digit sum, then times one digit by tens and ones."""
    a, b, c = ops
    t = s(a + b)
    p1, p2 = s(t // 10 * 10 * c), s(t % 10 * c)
    ans = s(p1 + p2)
    return Worked(f"({a}+{b})*{c}", f"{a}+{b}={t} {t // 10 * 10}*{c}={p1} {t % 10}*{c}={p2} {p1}+{p2}={ans}",
                  f"{a}+{b}={t}", str(ans))


def linear(ops, s: Slip) -> Worked:
    """ax+b=c with an integer solution: move b, then divide."""
    a, x, b = ops
    c = a * x + b
    r = s(c - b)
    ans = s(_divide(r, a))
    return Worked(f"{a}x{_signed(b)}={c}", f"{c}{_signed(-b)}={r} {r}/{a}={ans}", f"{a}x={r}", str(ans))


# ---------------------------------------------------------------- hard (tier 3)
def fraction(ops, s: Slip) -> Worked:
    """a/b±c/d, reduced fractions below 2, different one-digit denominators; answer reduced p/q.

    Two reduced fractions with different denominators never sum to an integer, so the
    answer is always a fraction.
    """
    a, b, sign, c, d = ops
    den = b * d
    n1, n2 = s(a * d), s(c * b)
    n = s(n1 + sign * n2)
    op = "+" if sign > 0 else "-"
    think = f"{b}*{d}={den} {a}*{d}={n1} {c}*{b}={n2} {n1}{op}{n2}={n}"
    ans = _frac(n, den)
    if ans != f"{n}/{den}":
        think += f" {n}/{den}={ans}"
    return Worked(f"{a}/{b}{op}{c}/{d}", think, f"den {den}, {a}/{b}={n1}/{den}", ans)


def mul_mod(ops, s: Slip) -> Worked:
    """(a*b) mod m: multiply by tens and ones, then subtract the largest multiple of m."""
    a, b, m = ops
    p1, p2 = s(a // 10 * 10 * b), s(a % 10 * b)
    p = s(p1 + p2)
    qm = s(p // m * m)
    ans = s(p - qm)
    return Worked(f"({a}*{b}) mod {m}",
                  f"{a // 10 * 10}*{b}={p1} {a % 10}*{b}={p2} {p1}+{p2}={p} {p // m}*{m}={qm} {p}-{qm}={ans}",
                  f"{a}*{b}={p}", str(ans))


def linear2(ops, s: Slip) -> Worked:
    """ax+b=cx+d with an integer (possibly negative) solution: collect x, move constants, divide."""
    a, c, x, b = ops
    d = (a - c) * x + b
    k = s(a - c)
    r = s(d - b)
    ans = s(_divide(r, k)) if k else 0
    return Worked(f"{a}x{_signed(b)}={c}x{_signed(d)}",
                  f"{a}x-{c}x={k}x {d}{_signed(-b)}={r} {r}/{k}={ans}", f"{k}x={r}", str(ans))


# ---------------------------------------------------------------- operand samplers
def _nonzero(rng: random.Random, lo: int, hi: int) -> int:
    return rng.choice([v for v in range(lo, hi + 1) if v])


def _sample_fraction(rng: random.Random):
    while True:
        b, d = rng.sample(range(2, 10), 2)
        a, c = rng.randrange(1, 2 * b), rng.randrange(1, 2 * d)
        if gcd(a, b) == 1 and gcd(c, d) == 1:
            return a, b, rng.choice((1, -1)), c, d


def _sample_sum_times(rng: random.Random):
    a = rng.randint(10, 89)
    return a, rng.randint(10, 99 - a), rng.randint(3, 9)


def _sample_mul_mod(rng: random.Random):
    # m divides neither factor: otherwise the answer is 0 at a glance, a shortcut, not a computation.
    while True:
        a, b, m = rng.randint(11, 49), rng.randint(3, 9), rng.randint(3, 9)
        if a % m and b % m:
            return a, b, m


def _sample_linear2(rng: random.Random):
    a = rng.randint(4, 13)
    return a, rng.randint(2, a - 2), _nonzero(rng, -9, 15), _nonzero(rng, -40, 40)


SAMPLERS: dict[str, Callable[[random.Random], tuple]] = {
    "add2": lambda r: (r.randint(10, 99), r.randint(10, 99)),
    "sub2": lambda r: tuple(sorted(r.sample(range(10, 100), 2), reverse=True)),
    "chain": lambda r: (r.randint(10, 99), *[(r.choice((1, -1)), r.randint(10, 99)) for _ in range(3)]),
    "sum_times": _sample_sum_times,
    "linear": lambda r: (r.randint(2, 9), r.randint(2, 19), _nonzero(r, -60, 60)),
    "fraction": _sample_fraction,
    "mul_mod": _sample_mul_mod,
    "linear2": _sample_linear2,
}

FAMILIES: dict[str, Callable[[tuple, Slip], Worked]] = {
    "add2": add2, "sub2": sub2, "chain": chain, "sum_times": sum_times, "linear": linear,
    "fraction": fraction, "mul_mod": mul_mod, "linear2": linear2,
}

# Tier name -> (numeric difficulty, families drawn in equal shares).
TIERS: dict[str, tuple[int, tuple[str, ...]]] = {
    "easy": (1, ("add2", "sub2")),
    "medium": (2, ("chain", "sum_times", "linear")),
    "hard": (3, ("fraction", "mul_mod", "linear2")),
}


def work(family: str, ops: tuple, slip: Slip | None = None) -> Worked:
    """The worked instance of `family` on `ops`; `slip` perturbs intermediates (default: none)."""
    return FAMILIES[family](ops, slip or (lambda v: v))


_NUMBER = re.compile(r"\d+(?:/\d+)?")


def leaks(w: Worked) -> bool:
    """True if the summary states the answer's value: as a result (after '='), or as any
    number the question does not already contain."""
    target = abs(Fraction(w.answer))
    given = set(_NUMBER.findall(w.question))
    results = re.findall(r"=-?(\d+(?:/\d+)?)", w.summary)
    new = [t for t in _NUMBER.findall(w.summary) if t not in given]
    return any(Fraction(t) == target for t in results + new)


def _slip_value(v: int, rng: random.Random) -> int:
    """A tiny-model-like slip: off by one, or a dropped/extra carry (±10) on a multi-digit value."""
    return v + rng.choice((-10, -1, 1, 10) if abs(v) >= 10 else (-1, 1))


def wrong_work(family: str, ops: tuple, rng: random.Random, visible: bool | None = None,
               tries: int = 50) -> Worked | None:
    """A consistently wrong worked instance: one intermediate slips, later steps follow from it.

    For warm-start challenger examples that must learn to check a draft, not trust it.
    `visible=True` puts the slip where the summary shows it (a plausibly wrong
    intermediate), False keeps the summary right and the slip in the hidden steps, None
    takes either. None comes back when no such slip changes the answer (e.g. `9x-3x=6x`
    with x=-1: a slipped `6x=-5` still rounds to -1). Prefer the model's own wrong drafts when you have them; this is the
    synthetic supplement.
    """
    right = work(family, ops)
    n_steps = [0]

    def count(v):
        n_steps[0] += 1
        return v

    work(family, ops, count)
    for _ in range(tries):
        k, i = rng.randrange(n_steps[0]), [0]

        def slip(v):
            i[0] += 1
            return _slip_value(v, rng) if i[0] - 1 == k else v

        w = work(family, ops, slip)
        if Fraction(w.answer) != Fraction(right.answer) and visible in (None, w.summary != right.summary):
            return w
    return None
