#!/usr/bin/env bash
# The paper's setting (arXiv:2607.07690, Table 3): Qwen3-0.6B, DeepMath-103K hard split
# (3,000 train / 300 held-out, +300 validation to choose the cascade direction), N = 8,
# two rank-16 LoRA adapters (float32) on one frozen bf16 base, lr 5e-5 with linear decay and 10% warm-up,
# vLLM sampling at T = 0.6, top-p 0.95. --micro-batch 4: each update's gradient is accumulated
# over 4 completions per forward/backward, so 8k-token activations fit (the same step).
# --is-cap 3: vLLM's bf16 log-probs are expected to differ from the trainer's recompute (not measured
# here: no GPU; `sampler_gap` in metrics.jsonl shows it), so the update is on-policy with each token
# weighted by min(trainer / sampler, 3) (TRL's token_truncate, at its cap).
#
#   bash configs/paper_qwen3_0.6b.sh /path/to/DeepMath-103K/data [extra flags]
#
# Needs a CUDA GPU, `pip install -e '.[vllm]'` and hub access for Qwen/Qwen3-0.6B (or a
# local copy: pass --model /path/to/Qwen3-0.6B after the data path).
# Rough cost, not measured here: 375 steps × 8 problems × 16 rollouts of up to 8k tokens is
# ~48k rollouts per run; at a few thousand tokens/s per adapter on one H100-class GPU with
# vLLM, expect on the order of 10-20 GPU-hours per run.
set -euo pipefail
DATA=${1:?usage: $0 /path/to/DeepMath-103K/data [extra flags]}
shift
LEARNER=${LEARNER:-baselines.agon_grpo}
python -m "$LEARNER" \
  --model Qwen/Qwen3-0.6B --problems "deepmath:$DATA" --train-tiers all --eval.tier all \
  --lora-rank 16 --dtype bfloat16 --lr 5e-5 --lr-schedule linear --warmup-frac 0.1 \
  --sampling.temperature 0.6 --sampling.top-p 0.95 --sampling.max-new-tokens 8192 \
  --eval.temperature 0.6 --eval.top-p 0.95 --eval.samples 4 --eval.problems 300 --eval.max-new-tokens 8192 \
  --problems-per-step 8 --steps 375 --template default --backend auto --device cuda --micro-batch 4 --is-cap 3 \
  --checkpoint-every 25 --eval-every 50 "$@"
