"""
# Agon, discrete variant ("hidden sum")

| Import             | `from agon_env.discrete import env, parallel_env, raw_env`   |
|--------------------|---------------------------------------------------------------|
| Actions            | Discrete                                                      |
| Parallel API       | Yes (turn-based)                                              |
| Agents             | `agents = ["model_a", "model_b"]`                             |
| Action space       | `Discrete(n_digits·(n_values − 1) + 2)`                       |
| Observation space  | `Box(0, 1, (n_digits + 2 + 2·n_digits·(n_values + 1),), float32)` |

The Agon game (arXiv:2607.07690) with no LLM, for classic multi-agent RL: thousands of
episodes a second, numpy observations, one discrete action per step. The rules and the
reward schemes are the text game's, taken from `agon_env.rules`.

## The problem
A hidden vector of `n_digits` digits, each uniform in `0..n_values-1`. The target is their
sum, in `0..n_digits·(n_values-1)`. Each player can "work out" each digit independently
with probability `visibility` (its insight into this problem), drawn afresh per player
and episode. A player who misses a digit can only guess: at best 1 in `n_values`.

## Episode
1. `reset()` draws the problem and picks the drafter (roles alternate across episodes).
2. The **drafter** writes its draft one token per step. At work step `i` it sees digit `i`
   (if it worked it out) and its own draft so far, and writes work token `i`; the intended
   reading is "digit `i` is `v`", and any token ≥ `n_values` is "blank". Then, at the answer
   step, the digits are gone: it re-reads its draft (as its view, too) and writes its answer.
3. The **challenger** sees its own worked-out digits and the drafter's work tokens, but
   never the drafter's answer (the summary channel withholds it), and writes its answer.
4. Both are graded; both terminate and are paid.

An answer is an action in `0..n_digits·(n_values-1)`; the last action is "no answer":
φ = 0 (the format term) and c = 0. All actions are legal at every step (no mask). An action
is a Python or numpy int or a 0-d integer array (what `action_space.contains` accepts, bool
aside); anything else raises a ValueError naming the agent and the range.

## Why this is still the Agon game
- *The draft is visible, the answer is withheld.* The challenger reads every work token and
  no answer token, like the text game's summary (thinking dropped, answer withheld).
- *The work is informative but is not the answer.* The drafter's draft is its only memory
  at the answer step, so writing useful work is how it solves the problem (as reasoning
  is for an LLM), and the challenger can read it. But a draft with a gap spells out no
  answer: the gap's digit is uniform, so the sum of the shown digits is wrong unless the
  reader fills the gap with what it worked out itself. That is a **conversion** (the
  challenger right where the drafter was wrong), and it needs both reading and its own
  work. Copying the draft only ties the drafter: right when it was right. Nothing forces the drafter to be
  honest, and under `zero_sum` it gains by misleading.
- *Rewards are rival-relative.* Each game is paid by `rules.pay`, as in the text game, so
  the conversion bonus c(b)(1 − c(a)), the winner and the conversion are the text game's.
- *Roles alternate*, as in the paper and in `agon_env.env`.

## Observation (one float32 vector, all entries 0 or 1)
`[phase (n_digits + 2) | view (n_digits × (n_values+1)) | draft (n_digits × (n_values+1))]`
- `phase`: one-hot: work step 0..n_digits-1, answer (the drafter's last step and the
  challenger's only one), waiting (not this agent's turn, or the episode is over);
- `view`: per digit one-hot of the value this agent sees, or slot `n_values` ("unknown").
  The drafter sees digit `i` only at work step `i`; the challenger sees its digits throughout;
- `draft`: per work token one-hot of the token written so far, `n_values` if not written.
  The drafter's answer is in no observation.

At its answer step the drafter's digits are gone and it re-reads its draft as its view: it
stands where a challenger with that draft and those digits would, and the two observations
are the same vector. One answering skill then serves both roles, and the challenger's
experience (where the view slots are the true digits) ties the meaning of a work token to
the digit it names. Without this, our PPO self-play runs drifted to a private token code
(the drafter wrote 0→3, 1→0, 3→0), which no other reader can read. The target is the plain sum,
not the sum modulo `n_values`, for the same reason: a modular sum is kept by shifted codes
(self-play found 0→2, 1→3, 2→0, 3→1 with two digits mod 4); a plain sum by the
identity code alone.

## Rewards (`reward=`, `format_weight` λ = 0.5)
c ∈ {0,1}: answer == target. φ ∈ {0,1}: an answer was given (not the last action).
- drafter: R(a) = 2c(a) + λφ(a)   (under `zero_sum`: −R(b));
- challenger, `"agon"`: 2c(b) + c(b)(1 − c(a)) + λφ(b); `"cooperative"`, `"margin"`,
  `"zero_sum"` as in the text env. The length tiebreak has no meaning here (no lengths).

`infos[agent]` after the episode: `role`, `correct`, `formatted`, `answer`, `target`,
`reward`, `converted` and `winner` (the agent who out-solved the other, or None).

## Roles (`roles=`)
As in `agon_env.env`: `"alternate"` (default): the drafter is `AGENTS[(s + k) % 2]`, with
`s` the last reset's seed (0 if never seeded) and `k` the episodes since, so a loop of
`reset(seed=ep)` alternates too. `"fixed"`: model_a always drafts (the paper's ablation).
`reset(options={"drafter": "model_b"})` pins the drafter for one episode. A `reset` or
`step` that raises changes nothing.

## Arguments
`n_digits` (2), `n_values` (4), `visibility` (0.6), `reward` ("agon"), `format_weight` (0.5),
`roles` ("alternate"), `render_mode` ("ansi", "human" or None).

## Parallel API and vectorisation
`parallel_env()` is `turn_based_aec_to_parallel(env())`: each step every agent submits an
action and only the mover's counts; an episode is `n_digits + 2` parallel steps and both
rewards arrive on the last one. SuperSuit vectorises it into an SB3 `VecEnv` with two
slots (one per seat) per copy:
`ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(parallel_env()), n, base_class="stable_baselines3")`.
Limits: the seat that is not moving still yields steps (phase "waiting") whose actions are
ignored, so a learner trained on every slot learns from no-op steps unless it drops them;
all slots share one policy (parameter sharing, no separate rival); SuperSuit's SB3
wrapper cannot be seeded under SB3 2.9 (`seed()` fails); and SuperSuit is an optional
dependency (`pip install supersuit`). `agon_env.single_agent.SingleAgentEnv`
has none of these limits.

## Reference policies
`heuristic_policy(n_digits, n_values, reader)` is an honest drafter (writes what it sees,
answers the sum when its draft has no gap, else the most likely sum) with a reader that is
`"combine"` (own digits, gaps filled from the draft), `"copy"` (the draft alone: "copy
what the drafter shows") or `"blind"` (own digits alone). `random_policy(n_actions)` is
uniform. `play(env, policies, rng)` runs one episode and returns the infos.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from ._aec import AGENTS, AgonAEC
from .rules import RewardConfig, pay

READERS = ("combine", "copy", "blind")

# A policy maps (observation, rng) to an action.
Policy = Callable[[np.ndarray, np.random.Generator], int]


def env(**kwargs) -> AECEnv:
    """The discrete Agon AEC environment with PettingZoo's order-enforcing wrapper.

    No `AssertOutOfBoundsWrapper`: the env's own action check names the agent and the range.
    """
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))


def parallel_env(**kwargs):
    """Parallel API: each step, only the agent whose turn it is acts; others' actions are ignored."""
    return turn_based_aec_to_parallel(env(**kwargs))


class Layout:
    """Where each part of the observation vector lives, for envs and policies alike."""

    def __init__(self, n_digits: int, n_values: int):
        self.n_digits, self.n_values, self.width = n_digits, n_values, n_values + 1
        self.answer_phase, self.wait_phase = n_digits, n_digits + 1
        self.no_answer = n_digits * (n_values - 1) + 1  # the last action; answers are 0..no_answer-1
        self.n_actions = self.no_answer + 1
        self.view = n_digits + 2
        self.draft = self.view + n_digits * self.width
        self.size = self.draft + n_digits * self.width

    def decode(self, obs: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
        """(phase, view values, draft tokens); `n_values` means unknown / blank."""
        phase = int(np.argmax(obs[: self.view]))
        view = obs[self.view: self.draft].reshape(self.n_digits, self.width).argmax(1)
        draft = obs[self.draft: self.size].reshape(self.n_digits, self.width).argmax(1)
        return phase, view, draft


class raw_env(AgonAEC):
    metadata = {"name": "agon_discrete_v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}

    def __init__(
        self,
        n_digits: int = 2,
        n_values: int = 4,
        visibility: float = 0.6,
        reward: str = "agon",
        format_weight: float = 0.5,
        roles: str = "alternate",
        render_mode: str | None = None,
    ):
        if n_digits < 1 or n_values < 2:
            raise ValueError(f"need n_digits >= 1 and n_values >= 2, got n_digits={n_digits}, n_values={n_values}")
        if not 0.0 <= visibility <= 1.0:
            raise ValueError(f"visibility must be a probability in [0, 1], got {visibility}")
        self.reward_config = RewardConfig(reward, format_weight)
        self.layout = Layout(n_digits, n_values)
        super().__init__(roles, render_mode, spaces.Box(0.0, 1.0, (self.layout.size,), np.float32),
                         spaces.Discrete(self.layout.n_actions))
        self.n_digits, self.n_values, self.visibility = n_digits, n_values, visibility

    # ------------------------------------------------------------------ episode flow
    def _begin(self, options):
        k, m, rng = self.n_digits, self.n_values, self.np_random
        self.digits = rng.integers(0, m, k)
        self.target = int(self.digits.sum())
        # What each role worked out: the digit where seen, `m` ("unknown") elsewhere.
        self.seen = {role: np.where(rng.random(k) < self.visibility, self.digits, m) for role in ("drafter", "challenger")}
        self.draft = np.full(k, m)
        self.step_index = 0  # drafter work steps 0..k-1, its answer at k, the challenger's at k+1
        self.answers: dict[str, int] = {}
        return {}

    def observe(self, agent):
        lay, k = self.layout, self.n_digits
        obs = np.zeros(lay.size, np.float32)
        is_drafter = agent == self.drafter
        acting = agent == self.agent_selection and not self.terminations[agent]
        if not acting:
            phase = lay.wait_phase
        else:
            phase = min(self.step_index, lay.answer_phase) if is_drafter else lay.answer_phase
        obs[phase] = 1.0
        if is_drafter:
            # The drafter's only memory is its draft: at the answer step it re-reads it as its view.
            view = self.draft.copy() if acting and self.step_index == k else np.full(k, self.n_values)
            if acting and self.step_index < k:
                view[self.step_index] = self.seen["drafter"][self.step_index]
        else:
            view = self.seen["challenger"]
        rows = np.arange(k) * lay.width
        obs[lay.view + rows + view] = 1.0
        obs[lay.draft + rows + self.draft] = 1.0
        return obs

    def _check_action(self, agent, action):
        if isinstance(action, np.ndarray) and action.ndim == 0 and np.issubdtype(action.dtype, np.integer):
            action = action[()]  # a 0-d integer array, as `action_space.contains` accepts
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < self.layout.n_actions:
            raise ValueError(f"action for {agent!r} must be an int in 0..{self.layout.n_actions - 1}, got {action!r}")
        return int(action)

    def _act(self, agent, action):
        index, self.step_index = self.step_index, self.step_index + 1
        if index < self.n_digits:
            self.draft[index] = min(action, self.n_values)  # any token >= n_values is blank
            return None
        self.answers[self.role(agent)] = action
        if agent == self.drafter:
            self.agent_selection = self.challenger
            return None
        graded = {role: {"correct": a == self.target, "formatted": a != self.layout.no_answer, "answer": a}
                  for role, a in self.answers.items()}
        return pay(self.reward_config, graded["drafter"], graded["challenger"]), \
            {a: {"target": self.target} for a in AGENTS}

    # ------------------------------------------------------------------ rendering
    def _render_text(self) -> str:
        tok = lambda v: "?" if v == self.n_values else str(v)  # noqa: E731
        ans = lambda v: "none" if v == self.layout.no_answer else str(v)  # noqa: E731
        show = lambda xs: " ".join(tok(v) for v in xs)  # noqa: E731
        lines = [
            f"digits {show(self.digits)} -> target {self.target}",
            f"drafter {self.drafter} sees [{show(self.seen['drafter'])}], wrote [{show(self.draft)}], "
            f"answer {ans(self.answers['drafter']) if 'drafter' in self.answers else '-'}",
            f"challenger {self.challenger} sees [{show(self.seen['challenger'])}], "
            f"answer {ans(self.answers['challenger']) if 'challenger' in self.answers else '-'}",
        ]
        return "\n".join(lines)


# ---------------------------------------------------------------------- reference policies
def random_policy(n_actions: int) -> Policy:
    """Uniform over all actions, at every step."""
    return lambda obs, rng: int(rng.integers(n_actions))


def heuristic_policy(n_digits: int = 2, n_values: int = 4, reader: str = "combine") -> Policy:
    """An honest drafter, and a challenger that reads as `reader` says (see the module doc)."""
    if reader not in READERS:
        raise ValueError(f"reader must be one of {READERS}, got {reader!r}")
    lay = Layout(n_digits, n_values)

    def act(obs: np.ndarray, rng: np.random.Generator) -> int:
        phase, view, draft = lay.decode(obs)
        if phase < n_digits:
            return int(view[phase])
        # At the drafter's answer step view == draft, so every reader answers from the draft.
        if reader == "combine":
            known = np.where(view < n_values, view, draft)
        else:
            known = draft if reader == "copy" else view
        gaps = int((known == n_values).sum())
        # The mode of the unknown digits' sum is gaps·(n_values-1)/2; with no gap it is the sum.
        return int(known[known < n_values].sum() + gaps * (n_values - 1) // 2)

    return act


def play(e: AECEnv, policies: dict[str, Policy], rng: np.random.Generator, **reset_kwargs) -> dict[str, dict]:
    """Play one episode of `e` (reset here) with one policy per agent; return each agent's final info."""
    e.reset(**reset_kwargs)
    infos = {}
    for agent in e.agent_iter():
        obs, _, term, trunc, info = e.last()
        if term or trunc:
            infos[agent] = info
            e.step(None)
        else:
            e.step(policies[agent](obs, rng))
    return infos
