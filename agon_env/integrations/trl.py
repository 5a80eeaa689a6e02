"""Agon's rewards as TRL reward functions, and the datasets they read.

    from trl import GRPOConfig, GRPOTrainer
    from agon_env import AgonGame
    from agon_env.integrations.trl import AgonRewards, challenger_dataset
    from problems import load

    game = AgonGame(template="compact")                      # the rules the env plays by
    problems = load("arith", split="train", tier="hard")[:64]
    drafts = [...]                                           # one rival draft per problem
    trainer = GRPOTrainer(model, args=GRPOConfig(...), processing_class=tokenizer,
                          reward_funcs=AgonRewards(game).challenger_reward,
                          train_dataset=challenger_dataset(problems, drafts, game))

Reward functions
----------------
Both have TRL's signature `f(prompts, completions, **columns) -> list[float]`: TRL passes
every dataset column except `prompt` as a keyword list (one entry per completion, repeated
over the group), plus `completion_ids`, `trainer_state`, `log_metric` and `log_extra`.
A completion is a plain string, or a conversational list of message dicts (the last
message's `content` is graded; a list of content blocks is joined from its text parts).

Nothing here grades or pays: every number comes from the game's own grader
(`AgonGame.grader`, `AgonGame.grade_solo`) and pay rule (`rules.pay`), so TRL's reward for
a text equals the env's (`AgonGame.score`) for the same text, under the same game.

- `drafter_reward`: the drafter's pay, R(a) = 2c(a) + λφ(a). Outside a paired game there
  is no challenger, and none is needed: under the `agon`, `cooperative` and `margin`
  schemes the drafter's pay does not depend on the challenger's answer, so the solo grade
  (`AgonGame.grade_solo`, what GRPO pays) *is* the env's drafter reward. Under `zero_sum`
  the drafter is paid by whoever reads its draft, which a TRL batch lacks, so
  `drafter_reward` refuses that scheme. Columns: `problem` (or `answer`).
- `challenger_reward`: the challenger's pay under the game's scheme, e.g. Agon's
  2c(b) + c(b)(1 − c(a)) + λφ(b). The rival's draft was graded once, when the dataset was
  built; its verdict travels in the columns, so the conversion bonus is computed inside
  TRL. Columns: `problem` (or `answer`), `draft_correct`, `draft_formatted`, `draft_length`.

`problem` is the problem's JSON record (any domain, code tests included); a dataset of
your own may give `answer` (a math reference answer) instead. The module-level functions
play the default game (`AgonGame()`); `AgonRewards(game)` binds both to another one. Each
call logs `pass` (and, for the challenger, `conversion`, `keep` and the win rates, as the
shipped learners compute them with `rules.game_rates`) through TRL's `log_metric`.

Datasets
--------
`drafter_dataset(problems, game)` and `challenger_dataset(problems, drafts, game)` return
a `datasets.Dataset` (what `GRPOTrainer` accepts) whose `prompt` is the game's own prompt
(`conversational=True`: as chat messages), with the columns above. The challenger's
prompt holds the draft's summary only (thinking dropped, answer withheld). The `draft`
column keeps the rival's full draft for inspection; TRL never shows columns to the model.
"""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any, Callable, Sequence

from problems.record import Problem

from ..game import AgonGame
from ..rules import game_rates, pay

if TYPE_CHECKING:  # pragma: no cover
    from datasets import Dataset

DRAFT_COLUMNS = ("draft_correct", "draft_formatted", "draft_length")
_BUILDERS = {"drafter_reward": "drafter_dataset(problems, game)",
             "challenger_reward": "challenger_dataset(problems, drafts, game)"}


# ---------------------------------------------------------------- reading TRL's arguments
def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a string, or a conversation whose last message is graded."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content", "")
        if isinstance(content, list):  # content blocks: [{"type": "text", "text": ...}, ...]
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        if isinstance(content, str):
            return content
    raise TypeError(f"a completion must be a str or a list of message dicts with str 'content', got {completion!r:.120}")


_TRL_KWARGS = {"completion_ids", "trainer_state", "log_metric", "log_extra", "environments"}  # not dataset columns


def _column(fn: str, columns: dict, name: str, n: int) -> list:
    if name not in columns:
        raise ValueError(f"{fn} needs the dataset column {name!r}, which TRL passes as a keyword; got columns "
                         f"{sorted(k for k in columns if k not in _TRL_KWARGS)}. Build the dataset with "
                         f"agon_env.integrations.trl.{_BUILDERS[fn]}")
    values = list(columns[name])
    if len(values) != n:
        raise ValueError(f"{fn}: column {name!r} has {len(values)} values for {n} completions")
    return values


def _problems(fn: str, columns: dict, n: int) -> list[Problem]:
    """The problem of every completion: from the `problem` JSON record, else a math problem from `answer`."""
    if "problem" in columns:
        return [Problem.from_dict(json.loads(p)) for p in _column(fn, columns, "problem", n)]
    if "answer" not in columns:
        raise ValueError(f"{fn} needs the dataset column 'problem' (a JSON Problem record) or 'answer' (the reference "
                         f"answer); got columns {sorted(k for k in columns if k not in _TRL_KWARGS)}. Build the dataset "
                         f"with agon_env.integrations.trl.{_BUILDERS[fn]}")
    # the grader reads only the answer (and domain); the question is a placeholder
    return [Problem(id=f"trl-{i}", question="(from a TRL dataset's 'answer' column)", answer=str(a))
            for i, a in enumerate(_column(fn, columns, "answer", n))]


def _log(columns: dict, metrics: dict[str, float]) -> None:
    log: Callable[[str, float], None] | None = columns.get("log_metric")
    if log is not None:
        for k, v in metrics.items():
            log(f"agon/{k}", float(v))


# ---------------------------------------------------------------- the reward functions
class AgonRewards:
    """Both roles' TRL reward functions under one `AgonGame` (see the module docstring)."""

    def __init__(self, game: AgonGame | None = None):
        self.game = game or AgonGame()

    def drafter_reward(self, prompts: Sequence, completions: Sequence, **columns) -> list[float]:
        """R(a) = 2c(a) + λφ(a) for each completion, graded by the game's grader (`AgonGame.grade_solo`)."""
        if self.game.rewards.scheme == "zero_sum":
            raise ValueError("drafter_reward: under reward='zero_sum' a drafter is paid by its reader's answer, which a "
                             "TRL batch does not have; train the drafter under 'agon', 'cooperative' or 'margin'")
        texts = [completion_text(c) for c in completions]
        rewards, verdicts = self.game.grade_solo(_problems("drafter_reward", columns, len(texts)), texts)
        _log(columns, {"pass": sum(v.correct for v in verdicts) / max(len(verdicts), 1)})
        return rewards

    def challenger_reward(self, prompts: Sequence, completions: Sequence, **columns) -> list[float]:
        """The challenger's pay under the game's scheme, against the graded rival draft in the columns."""
        fn, texts = "challenger_reward", [completion_text(c) for c in completions]
        problems = _problems(fn, columns, len(texts))
        correct, formatted, length = (_column(fn, columns, k, len(texts)) for k in DRAFT_COLUMNS)
        verdicts = self.game.grader.grade_batch(problems, texts)
        games = [pay(self.game.rewards, {"correct": bool(c), "formatted": bool(f), "length": int(n)}, v.as_info())
                 for c, f, n, v in zip(correct, formatted, length, verdicts)]
        rates = game_rates(games)
        _log(columns, {"pass": rates["challenger_pass"], "conversion": rates["conversion"], "keep": rates["keep"],
                       "win_challenger": rates["win_challenger"], "win_drafter": rates["win_drafter"]})
        return [g.challenger_reward for g in games]


@cache
def _default() -> AgonRewards:
    return AgonRewards()


def drafter_reward(prompts: Sequence, completions: Sequence, **columns) -> list[float]:
    """`AgonRewards().drafter_reward` under the default game (`AgonGame()`)."""
    return _default().drafter_reward(prompts, completions, **columns)


def challenger_reward(prompts: Sequence, completions: Sequence, **columns) -> list[float]:
    """`AgonRewards().challenger_reward` under the default game (`AgonGame()`)."""
    return _default().challenger_reward(prompts, completions, **columns)


# ---------------------------------------------------------------- datasets
def _prompt(game: AgonGame, text: str, conversational: bool):
    return list(game.template.messages(text)) if conversational else text


def _base_rows(problems: Sequence[Problem], prompts: list[str], game: AgonGame, conversational: bool) -> dict[str, list]:
    return {"prompt": [_prompt(game, t, conversational) for t in prompts],
            # no worked solution: the reward never reads it, and a trainer may log every column
            "problem": [json.dumps({k: v for k, v in p.to_dict().items() if k != "solution"}, ensure_ascii=False)
                        for p in problems],
            "answer": [p.answer for p in problems], "problem_id": [p.id for p in problems]}


def drafter_dataset(problems: Sequence[Problem], game: AgonGame | None = None, conversational: bool = False) -> "Dataset":
    """One row per problem: the drafter's prompt, and the columns `drafter_reward` reads."""
    from datasets import Dataset

    game = game or _default().game
    return Dataset.from_dict(_base_rows(problems, game.drafter_prompts(problems), game, conversational))


def challenger_dataset(problems: Sequence[Problem], drafts: Sequence[str], game: AgonGame | None = None,
                       conversational: bool = False) -> "Dataset":
    """One row per (problem, rival draft): the challenger's prompt with that draft's summary, and the
    draft's verdict (graded here, once, by the game's grader) for `challenger_reward`.

    `drafts[i]` is a draft of `problems[i]`; repeat a problem to give it several drafts.
    """
    from datasets import Dataset

    game = game or _default().game
    if len(problems) != len(drafts):
        raise ValueError(f"challenger_dataset needs one draft per problem, got {len(problems)} problems and {len(drafts)} drafts")
    verdicts = game.grader.grade_batch(list(problems), list(drafts))
    rows = _base_rows(problems, game.challenger_prompts(problems, drafts), game, conversational)
    rows.update(draft=list(drafts), draft_correct=[v.correct for v in verdicts],
                draft_formatted=[v.formatted for v in verdicts], draft_length=[v.length for v in verdicts])
    return Dataset.from_dict(rows)
