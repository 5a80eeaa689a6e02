"""The AEC bookkeeping both Agon shells share (`agon_env.env`, `agon_env.discrete`).

Seats and roles, reset and step checks that run before any state changes, the
PettingZoo dicts, payment from a `rules.GameResult`, and the render shell. A shell adds
its episode content (`_begin`), observations, its acting rule (`_act`) and its text view.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from numbers import Integral
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from .rules import GameResult, drafter_seat

AGENTS = ("model_a", "model_b")
ROLE_MODES = ("alternate", "fixed")


class AgonAEC(AECEnv):
    """Two seats, a drafter and a challenger, one game per episode.

    Subclasses set `metadata`, `reset_options` (the option names `reset` accepts besides
    "drafter") and implement `_check_option`, `_begin`, `_check_action`, `_act`,
    `_render_text` and `observe`.
    """

    reset_options: tuple[str, ...] = ()

    def __init__(self, roles: str, render_mode: str | None, observation_space, action_space):
        super().__init__()
        if roles not in ROLE_MODES:
            raise ValueError(f"roles must be 'alternate' or 'fixed', got {roles!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.roles, self.render_mode = roles, render_mode
        self.possible_agents = list(AGENTS)
        self._obs_space, self._act_space = observation_space, action_space
        self._seed, self._episode = 0, 0  # the drafter of episode k after reset(seed=s): drafter_seat(s + k)
        self.np_random = np.random.default_rng()

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    # ------------------------------------------------------------------ reset
    def check_reset(self, seed: Any, options: Any) -> dict:
        """Validate `reset`'s arguments without changing anything; return the options to use."""
        name = self.metadata["name"]
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, Integral):
                raise TypeError(f"{name} reset: seed must be a non-negative int or None, got {type(seed).__name__}")
            if seed < 0:
                raise ValueError(f"{name} reset: seed must be a non-negative int or None, got {seed}")
        if options is None:
            return {}
        if not isinstance(options, Mapping):
            raise TypeError(f"{name} reset: options must be a dict or None, got {type(options).__name__}")
        known = ("drafter", *self.reset_options)
        out = {k: v for k, v in options.items() if k in known}
        if len(out) < len(options):  # PettingZoo's api_test passes one; ignoring is its convention
            unknown = ", ".join(sorted(repr(k) for k in options if k not in known))
            warnings.warn(f"{name} reset: ignoring unknown option(s) {unknown}; known: {known}", stacklevel=3)
        if out.get("drafter") is not None and out["drafter"] not in AGENTS:
            raise ValueError(f"options['drafter'] must be one of {AGENTS} or None, got {out['drafter']!r}")
        for key in self.reset_options:
            if out.get(key) is not None:
                out[key] = self._check_option(key, out[key])
        return out

    def reset(self, seed: int | None = None, options: dict | None = None):
        options = self.check_reset(seed, options)
        if seed is not None:
            self.np_random, self._seed, self._episode = np.random.default_rng(seed), int(seed), 0
            self._seeded()
        drafter = options.get("drafter") or AGENTS[drafter_seat(self._seed + self._episode, self.roles == "fixed")]
        self._episode += 1
        self.drafter, self.challenger = drafter, AGENTS[1 - AGENTS.index(drafter)]
        self.result: GameResult | None = None
        info = self._begin(options)
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {"role": self.role(a), **info} for a in self.agents}
        self.agent_selection = self.drafter

    def role(self, agent: str) -> str:
        return "drafter" if agent == self.drafter else "challenger"

    # ------------------------------------------------------------------ step
    def step(self, action):
        name = self.metadata["name"]
        if not hasattr(self, "agents") or not hasattr(self, "drafter"):
            raise RuntimeError(f"{name}: call reset() before step()")
        if not self.agents:  # every agent took its dead step
            raise RuntimeError(f"{name}: the episode is over; call reset() before step()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(f"agent {agent!r} is done; the only valid action is None, got {action!r:.80}")
            return self._was_dead_step(action)
        result = self._act(agent, self._check_action(agent, action))  # raises before any change
        self._cumulative_rewards[agent] = 0.0
        if result is not None:
            self._pay(*result)
            self.agent_selection = self.drafter
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _pay(self, r: GameResult, extra: dict[str, dict]):
        """End the episode: both players paid by `r`, their infos from its verdicts plus `extra[agent]`."""
        self.result = r
        winner = {None: None, "drafter": self.drafter, "challenger": self.challenger}[r.winner]
        for agent, reward, info in ((self.drafter, r.drafter_reward, r.drafter_info),
                                    (self.challenger, r.challenger_reward, r.challenger_info)):
            self.rewards[agent] = reward
            self.terminations[agent] = True
            self.infos[agent] = {**self.infos[agent], **info, "reward": reward, **extra.get(agent, {}),
                                 "converted": r.converted, "winner": winner}

    # ------------------------------------------------------------------ rendering
    def render(self):
        if self.render_mode is None:
            warnings.warn("render() called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        text = self._render_text() if hasattr(self, "drafter") else f"{self.metadata['name']}: not reset yet"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self):
        pass

    # ------------------------------------------------------------------ for subclasses
    def _seeded(self) -> None:
        """A seeded reset restarts the shell's own schedule (the text env's problem order)."""

    def _check_option(self, key: str, value):
        """Validate and convert reset option `key` (one of `reset_options`)."""
        raise NotImplementedError

    def _begin(self, options: dict) -> dict:
        """Set up the episode's content; return info entries both agents start with."""
        raise NotImplementedError

    def _check_action(self, agent: str, action):
        """Validate `action` for `agent`, raising with a clear message; return it converted."""
        raise NotImplementedError

    def _act(self, agent: str, action) -> tuple[GameResult, dict[str, dict]] | None:
        """Apply a valid action; return the game's result and extra infos when it ends."""
        raise NotImplementedError

    def _render_text(self) -> str:
        raise NotImplementedError
