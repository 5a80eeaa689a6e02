"""Agon inside other RL codebases.

- `agon_env.integrations.trl`: reward functions with TRL's `reward_funcs` signature and the
  datasets they read, so `trl.GRPOTrainer` trains either role on Agon's own rules and graders.
- `agon_env.integrations.textarena`: `Agon-v0`, the game as a TextArena two-player env over
  the PettingZoo env's rules (registered in TextArena's registry on import).

Each integration imports its framework lazily (or not at all), so `agon_env` itself never
needs it installed.
"""
