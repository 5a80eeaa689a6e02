"""Agon: the draft/challenge game of arXiv:2607.07690 as a PettingZoo environment."""

from .env import AGENTS, env, parallel_env, raw_env
from .game import AgonGame
from .grading import DomainGrader, ExactMatchGrader, MathGrader, Verdict, default_grader
from .prompts import TEMPLATES, PromptTemplate
from .rules import REWARD_SCHEMES, RewardConfig, score_games, summarize

__all__ = [
    "AGENTS", "AgonGame", "env", "parallel_env", "raw_env", "DomainGrader", "ExactMatchGrader", "MathGrader",
    "Verdict", "default_grader", "TEMPLATES", "PromptTemplate", "REWARD_SCHEMES", "RewardConfig",
    "score_games", "summarize",
]
