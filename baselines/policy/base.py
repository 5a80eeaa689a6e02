"""The policy interface every learner and inference method codes against.

- `generate(prompts, n, params, seed)` samples `n` completions per prompt in one batch and
  returns, per sample, the text, the prompt and completion token ids and per-token
  log-probs (`Generation`); `generate_seeded(calls, n, params)` makes several such calls, each
  with its own seed, in as few batches as the backend can;
- `token_logprobs(prompt_ids, completion_ids)` recomputes those log-probs with gradient,
  for the loss; `reference_logprobs` does it without gradient under the frozen reference
  (the LoRA base with adapters off, or a copy made at load) for a KL term.

Log-prob convention: `Generation.logprobs` and `token_logprobs` are the log-softmax of
the policy's *raw* logits (temperature 1, no top-p), whatever temperature was sampled at.
That is the policy's own distribution, the one its gradient moves, so sampling-time and
update-time numbers agree to float precision (tested within 1e-4). An importance ratio
against the temperature-scaled sampler is a learner's choice: `token_logprobs(...,
temperature=T)` scores under logits / T, as TRL does (`--tempered-logprobs`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch


def child_seed(seed: int, index: int) -> int:
    """The seed of item `index` under `seed` (a request in a batch, a problem in a step): hashed, so that
    seeds a learner derives from one another (a step's seed + 1, the next step's) never share a stream, as
    seed + index would."""
    return int(np.random.SeedSequence([seed % 2**64, index]).generate_state(1)[0])


@dataclass
class SamplingParams:
    """How completions are sampled."""

    temperature: float = 0.7
    """softmax temperature for sampling (ignored when greedy; <= 0 also means greedy)"""
    top_p: float = 1.0
    """nucleus sampling: keep the smallest token set with this much probability"""
    max_new_tokens: int = 128
    """completion length limit in tokens (a completion that hits it has finished=False)"""
    greedy: bool = False
    """take the arg-max token instead of sampling"""


@dataclass
class Generation:
    """One sampled completion and what the update needs to score it again."""

    prompt: str
    """the env's prompt text, before any chat template"""
    text: str
    """decoded completion, special tokens removed"""
    prompt_ids: list[int]
    """token ids actually fed to the model (after the chat template)"""
    completion_ids: list[int]
    """sampled token ids, including EOS if one was produced"""
    logprobs: list[float]
    """per completion token: log-softmax of the raw logits (temperature 1; see module doc)"""
    finished: bool
    """True if the completion stopped on EOS, False if it hit max_new_tokens"""


class Policy:
    """What a learner needs from a language-model policy. Subclasses implement it."""

    name: str = "policy"
    template: str | None = None
    """the prompt template this model was trained on (the tiny pair's 'compact'), or None for any"""

    def generate(self, prompts: list[str], n: int = 1, params: SamplingParams = SamplingParams(),
                 seed: int | None = None) -> list[list[Generation]]:
        """`n` completions per prompt, indexed [prompt][sample]; the same seed gives the same samples."""
        raise NotImplementedError

    def generate_seeded(self, calls: Sequence[tuple[list[str], int]], n: int = 1,
                        params: SamplingParams = SamplingParams()) -> list[list[Generation]]:
        """`generate(prompts, n, params, seed)` for each `(prompts, seed)` of `calls`, their groups
        concatenated. A backend may batch the calls, each still drawing from its own seed, so a call's
        samples do not depend on which calls share its batch (this default makes the calls one by one)."""
        return [g for prompts, seed in calls for g in self.generate(list(prompts), n, params, seed)]

    def token_logprobs(self, prompt_ids: list[list[int]], completion_ids: list[list[int]], temperature: float = 1.0,
                       share_prompts: bool = False):
        """(logp [B, T], mask [B, T]) of each completion token, with gradient, right-padded;
        under logits / `temperature` when it is not 1. `share_prompts`: a backend may compute each
        distinct prompt once for all its completions (the same numbers up to float rounding)."""
        raise NotImplementedError

    def reference_logprobs(self, prompt_ids: list[list[int]], completion_ids: list[list[int]], temperature: float = 1.0,
                           share_prompts: bool = False):
        """Same as `token_logprobs` under the frozen reference, without gradient; None if the policy has none."""
        raise NotImplementedError

    def parameters(self) -> list[torch.nn.Parameter]:
        """The trainable parameters only."""
        raise NotImplementedError

    def save(self, path: str | os.PathLike) -> None:
        raise NotImplementedError

    def publish(self) -> None:
        """Called on every rank together right after each optimizer step: a policy that samples elsewhere
        may send its new weights now (the server backend does; under torchrun that is a collective). This
        default has nothing to send."""

    def train(self):
        return self

    def eval(self):
        return self


class SamplerPolicy(Policy):
    """A policy that samples elsewhere (an engine, a server) and trains, scores and saves through the
    HF policy it wraps (`self.hf`); subclasses implement `generate`."""

    hf: Policy

    def token_logprobs(self, prompt_ids, completion_ids, temperature: float = 1.0, share_prompts: bool = False):
        return self.hf.token_logprobs(prompt_ids, completion_ids, temperature, share_prompts)

    def reference_logprobs(self, prompt_ids, completion_ids, temperature: float = 1.0, share_prompts: bool = False):
        return self.hf.reference_logprobs(prompt_ids, completion_ids, temperature, share_prompts)

    def parameters(self):
        return self.hf.parameters()

    def save(self, path):
        self.hf.save(path)

    def train(self):
        self.hf.train()
        return self

    def eval(self):
        self.hf.eval()
        return self
