"""Agon inside other RL codebases.

- `agon_env.integrations.trl`: reward functions with TRL's `reward_funcs` signature and the
  datasets they read, so `trl.GRPOTrainer` trains either role on Agon's own rules and graders.

Each integration imports its framework lazily (or not at all), so `agon_env` itself never
needs it installed.
"""
