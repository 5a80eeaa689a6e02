"""The Agon game's rules, with no PettingZoo and no grader in them.

Everything a learner or an environment shell needs to play the game lives here, once:
the summary channel (what the challenger is shown), answer extraction, the format term,
the role rotation and the reward schemes. `pay` turns two graded completions into one
`GameResult`; `agon_env.game` grades batches and calls it, and so do both env shells.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from numbers import Real
from typing import Callable, Sequence

REWARD_SCHEMES = ("agon", "cooperative", "margin", "zero_sum")
SUMMARY_MODES = ("paper", "full", "with_answer")
ANSWER_FORMATS = ("tags", "boxed", "tags_or_boxed")

_BOX_OR_BRACE = re.compile(r"\\(?:boxed|fbox)\s*\{|[{}]")


# ---------------------------------------------------------------- boxes
def _boxes(text: str) -> list[tuple[int, int, int | None]]:
    """Every `\\boxed{…}` / `\\fbox{…}` as (start, content start, closing brace or None if unclosed).

    Braces count as written (an escaped `\\{` too, so `\\{…\\}` pairs balance). One linear
    pass, so hostile nesting costs no more than its length.
    """
    if "box" not in text:
        return []
    stack: list[tuple[int, int] | None] = []
    out: list[tuple[int, int, int | None]] = []
    for m in _BOX_OR_BRACE.finditer(text):
        if m.group() == "}":
            if stack and (opened := stack.pop()) is not None:
                out.append((*opened, m.start()))
        else:
            stack.append((m.start(), m.end()) if m.end() - m.start() > 1 else None)
    return out + [(*o, None) for o in stack if o is not None]


def _strip_boxes(text: str) -> str:
    out, i = [], 0
    for start, _, close in sorted(_boxes(text)):
        if start < i:
            continue  # nested in a box already removed
        out.append(text[i:start])
        i = len(text) if close is None else close + 1
    out.append(text[i:])
    return "".join(out)


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{}` with balanced braces (the one closing last), stripped."""
    closed = [(close, begin) for _, begin, close in _boxes(text) if close is not None]
    if not closed:
        return None
    close, begin = max(closed)
    return text[begin:close].strip() or None


def _answer_blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of every closed `<answer>…</answer>` block, first closer wins, as the regex
    `<answer>(.*?)</answer>` finds them, but in one pass: that regex retries every later opener
    to the end of the text, which took 10 s for 10 000 unclosed openers."""
    spans, i = [], 0
    while (start := text.find("<answer>", i)) >= 0 and (close := text.find("</answer>", start + 8)) >= 0:
        spans.append((start, close + 9))
        i = close + 9
    return spans


def _answer_contents(text: str) -> list[str]:
    return [text[start + 8:end - 9] for start, end in _answer_blocks(text)]


# ---------------------------------------------------------------- summary channel
def drop_thinking(text: str) -> str:
    """Remove private reasoning.

    Closed `<think>…</think>` blocks go. A stray `</think>` with no opener means the
    reasoning started in the prompt (Qwen3 style), so everything before it goes. An
    unclosed `<think>` runs to the end of the text, so everything after it goes.
    """
    kept, i = [], 0  # `<think>.*?</think>` removed by find: the regex rescans to the end from every unclosed opener
    while (j := text.find("<think>", i)) >= 0 and (k := text.find("</think>", j + 7)) >= 0:
        kept.append(text[i:j])
        i = k + 8
    text = "".join(kept) + text[i:]
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    if "<think>" in text:
        text = text.split("<think>", 1)[0]
    return text


def _until_stable(cut: Callable[[str], str], text: str) -> str:
    """Apply `cut` until nothing changes, so removals cannot splice a new block together."""
    while (shorter := cut(text)) != text:
        text = shorter
    return text


def _cut_answers(text: str) -> str:
    kept, i = [], 0
    for start, end in _answer_blocks(text):
        kept.append(text[i:start])
        i = end
    text = "".join(kept) + text[i:]
    if "<answer>" in text:
        text = text.split("<answer>", 1)[0]
    return _strip_boxes(text)


def withhold_answer(text: str) -> str:
    """Remove every `<answer>…</answer>` block and every `\\boxed{…}` (unclosed ones run to the end)."""
    return _until_stable(_cut_answers, text)


_FENCED = re.compile(r"```.*?(?:```|\Z)", re.S)


def withhold_code(text: str) -> str:
    """Code's "final answer withheld": the answer block and every fenced code block go
    (an unclosed fence runs to the end), so the approach in prose stays and no runnable
    program reaches the challenger. Inline `code` and unfenced indented code stay.
    """
    return _until_stable(lambda t: _FENCED.sub("", _cut_answers(t)), text)


# What "final answer withheld" removes, per problem domain.
WITHHOLD = {"math": withhold_answer, "code": withhold_code}


def summarize(draft: str, mode: str = "paper", max_chars: int | None = None, domain: str = "math") -> str:
    """What the challenger reads of a draft.

    - `paper` (default): thinking dropped and the final answer withheld (`WITHHOLD[domain]`);
    - `with_answer`: thinking dropped, answer kept;
    - `full`: the whole draft.
    Overlong summaries keep their first `max_chars` characters.
    """
    if mode == "paper":
        s = WITHHOLD[domain](drop_thinking(draft))
    elif mode == "with_answer":
        s = drop_thinking(draft)
    elif mode == "full":
        s = draft
    else:
        raise ValueError(f"summary mode must be one of {SUMMARY_MODES}, got {mode!r}")
    s = re.sub(r"\n{3,}", "\n\n", s).strip()
    return s[:max_chars] if max_chars is not None else s


# ---------------------------------------------------------------- answers and format
def check_answer_format(answer_format: str) -> str:
    if answer_format not in ANSWER_FORMATS:
        raise ValueError(f"answer_format must be one of {ANSWER_FORMATS}, got {answer_format!r}")
    return answer_format


def extract_answer(completion: str, answer_format: str = "tags_or_boxed") -> str | None:
    """The final answer of a completion, stripped; None if it gave none.

    - `tags`: the content of the last closed `<answer>` block;
    - `boxed`: the last `\\boxed{}` with balanced braces;
    - `tags_or_boxed` (default): the tags, else the box.
    Both are looked for outside the thinking (`drop_thinking`): a tag or box inside `<think>`
    is reasoning, not an answer. A completion with neither (for example one cut off
    mid-reasoning) has no answer, and is never graded on stray numbers (math-verify alone
    would find the gold value in the trace).
    """
    check_answer_format(answer_format)
    text = drop_thinking(completion)
    if answer_format != "boxed":
        found = _answer_contents(text)
        if found:
            return found[-1].strip() or None
        if answer_format == "tags":
            return None
    return last_boxed(text)


def format_ok(completion: str) -> bool:
    """φ: exactly one non-empty closed `<answer>` block outside the thinking (as
    `extract_answer` reads it), and no unclosed `<think>`.

    The paper's format, whatever `answer_format` the grader reads: a boxed-only answer can
    be correct, but only the tags earn φ.
    """
    found = _answer_contents(drop_thinking(completion))
    if len(found) != 1 or not found[0].strip():
        return False
    return completion.count("<think>") == completion.count("</think>") or (
        "<think>" not in completion and completion.count("</think>") == 1
    )


# ---------------------------------------------------------------- roles
def drafter_seat(turn: int, fixed: bool = False) -> int:
    """Which of the two players drafts on `turn`: 0 on even turns and 1 on odd ones (roles
    swap every turn), or always 0 with fixed roles (the paper's ablation).

    A learner's turn is its optimizer step; an env's is its last reset seed plus the
    episodes played since that reset.
    """
    return 0 if fixed else turn % 2


# ---------------------------------------------------------------- rewards
def drafter_reward(c_a: bool, phi_a: bool, format_weight: float = 0.5) -> float:
    """R(a) = 2c(a) + λφ(a): the ordinary GRPO reward."""
    return 2.0 * c_a + format_weight * phi_a


def challenger_reward(
    scheme: str,
    c_a: bool,
    c_b: bool,
    phi_b: bool,
    format_weight: float = 0.5,
    length_tiebreak: float = 0.0,
    len_a: int = 0,
    len_b: int = 0,
) -> float:
    """The challenger's reward under `scheme` (see REWARD_SCHEMES).

    agon:        2c(b) + c(b)(1 − c(a)) + λφ(b)    (conversion bonus)
    cooperative: 2c(b) + λφ(b)
    margin:      c(b) − c(a) + λφ(b)
    zero_sum:    +1 if b out-solved a, −1 if a out-solved b, else 0 (no format term)
    Optional length tiebreak: + λ′·c(b)·c(a)·1[|b| < |a|], except under zero_sum, whose
    pay must stay zero-sum (the drafter gets −R(b)).
    """
    c_a, c_b, phi_b = int(c_a), int(c_b), int(phi_b)
    if scheme == "agon":
        r = 2 * c_b + c_b * (1 - c_a) + format_weight * phi_b
    elif scheme == "cooperative":
        r = 2 * c_b + format_weight * phi_b
    elif scheme == "margin":
        r = c_b - c_a + format_weight * phi_b
    elif scheme == "zero_sum":
        return float(c_b - c_a)
    else:
        raise ValueError(f"reward scheme must be one of {REWARD_SCHEMES}, got {scheme!r}")
    return float(r + length_tiebreak * c_b * c_a * (len_b < len_a))


def drafter_reward_for(scheme: str, c_a: bool, c_b: bool, phi_a: bool, format_weight: float = 0.5) -> float:
    """The drafter's pay: GRPO's reward, except under `zero_sum`, where it is −(challenger's)."""
    if scheme == "zero_sum":
        return float(int(c_a) - int(c_b))
    return drafter_reward(c_a, phi_a, format_weight)


# ---------------------------------------------------------------- one game
@dataclass(frozen=True)
class RewardConfig:
    """How the game pays its players."""

    scheme: str = "agon"
    format_weight: float = 0.5
    length_tiebreak: float = 0.0

    def __post_init__(self):
        if self.scheme not in REWARD_SCHEMES:
            raise ValueError(f"reward must be one of {REWARD_SCHEMES}, got {self.scheme!r}")
        for name in ("format_weight", "length_tiebreak"):  # else a bad value surfaces only at episode end
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
                raise ValueError(f"RewardConfig {name} must be a finite real number, got {value!r}")


@dataclass(frozen=True)
class GameResult:
    """One scored game: both players' rewards and per-player verdict infos."""

    drafter_reward: float
    challenger_reward: float
    drafter_info: dict
    challenger_info: dict

    @property
    def converted(self) -> bool:
        """Challenger right where the drafter was wrong."""
        return bool(self.challenger_info["correct"] and not self.drafter_info["correct"])

    @property
    def winner(self) -> str | None:
        """'drafter', 'challenger', or None for a tie in correctness."""
        ca, cb = self.drafter_info["correct"], self.challenger_info["correct"]
        return None if ca == cb else ("drafter" if ca else "challenger")


def pay(rewards: RewardConfig, drafter_info: dict, challenger_info: dict) -> GameResult:
    """Pay both players of one game from their verdicts (`correct`, `formatted`, and
    `length` for the tiebreak, 0 where absent)."""
    ca, cb = drafter_info["correct"], challenger_info["correct"]
    return GameResult(
        drafter_reward_for(rewards.scheme, ca, cb, drafter_info["formatted"], rewards.format_weight),
        challenger_reward(rewards.scheme, ca, cb, challenger_info["formatted"], rewards.format_weight,
                          rewards.length_tiebreak, drafter_info.get("length", 0), challenger_info.get("length", 0)),
        drafter_info, challenger_info,
    )


def game_rates(results: Sequence[GameResult]) -> dict[str, float]:
    """Who solved what over a batch of games.

    conversion: challenger right where the drafter was wrong; keep: right where the drafter
    was right (a copier shows conversion 0 and keep 1); win_*: out-solved the rival.
    A rate with nothing to count (conversion with no wrong draft, keep with no right one, any
    rate of no games) is 0.0, not NaN: loggers that average a window of steps (TRL's
    log_metric, the learners' 10-step means) would otherwise lose the whole window.
    """
    ca = [r.drafter_info["correct"] for r in results]
    cb = [r.challenger_info["correct"] for r in results]
    n, right_a = max(len(results), 1), sum(ca)
    return {
        "drafter_pass": right_a / n, "challenger_pass": sum(cb) / n,
        "conversion": sum(b and not a for a, b in zip(ca, cb)) / max(len(ca) - right_a, 1),
        "keep": sum(a and b for a, b in zip(ca, cb)) / max(right_a, 1),
        "win_drafter": sum(a and not b for a, b in zip(ca, cb)) / n,
        "win_challenger": sum(b and not a for a, b in zip(ca, cb)) / n,
        "tie": sum(a == b for a, b in zip(ca, cb)) / n,
    }
