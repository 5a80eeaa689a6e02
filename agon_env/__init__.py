"""Agon: the draft/challenge game of arXiv:2607.07690 as a PettingZoo environment."""

from . import code_grader  # noqa: F401  (registers the sandbox grader for domain "code")
from .code_grader import CodeGrader, extract_code
from .discrete import env as discrete_env
from .discrete import parallel_env as discrete_parallel_env
from .discrete import raw_env as discrete_raw_env
from .env import AGENTS, env, parallel_env, raw_env
from .game import AgonGame, Round, score_games
from .grading import DomainGrader, ExactMatchGrader, MathGrader, Verdict, default_grader
from .prompts import TEMPLATES, PromptTemplate
from .rules import (
    ANSWER_FORMATS,
    REWARD_SCHEMES,
    GameResult,
    RewardConfig,
    extract_answer,
    summarize,
    withhold_code,
)
from .sandbox import RunResult, Sandbox, SandboxConfig, namespaces_available
from .single_agent import SingleAgentEnv

__all__ = [
    "AGENTS", "ANSWER_FORMATS", "AgonGame", "CodeGrader", "DomainGrader", "ExactMatchGrader", "GameResult",
    "MathGrader", "PromptTemplate", "REWARD_SCHEMES", "RewardConfig", "Round", "RunResult", "Sandbox",
    "SandboxConfig", "SingleAgentEnv", "TEMPLATES", "Verdict", "default_grader", "discrete_env",
    "discrete_parallel_env", "discrete_raw_env", "env", "extract_answer", "extract_code", "namespaces_available",
    "parallel_env", "raw_env", "score_games", "summarize", "withhold_code",
]
