"""A lean KV-cache forward for Qwen3/Qwen2/Llama-style models, used only for sampling.

On the tiny ~1M-parameter models the transformers forward costs ~6 ms per decoding step
in Python overhead (mask building, output records, cache classes) against well under
1 ms of arithmetic, so a GRPO-sized step would spend most of its time there. This
module calls the same submodules (projections, norms, rotary embedding) in the same
order, without the framework around them. The log-prob test checks it against the
transformers forward to 1e-4; anything it does not recognise uses the normal path.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

SUPPORTED = ("qwen3", "qwen2", "llama")


def supports(model) -> bool:
    """A plain (non-peft) causal LM of a supported family without sliding-window attention.
    Any RoPE variant works: the model's own rotary-embedding module computes cos/sin."""
    cfg = getattr(model, "config", None)
    return (
        cfg is not None and cfg.model_type in SUPPORTED and type(model).__name__.endswith("ForCausalLM")
        and type(model).__module__.startswith("transformers.")  # not a PeftModel wrapping one
        and not getattr(cfg, "use_sliding_window", False)
    )


class Decoder:
    """Holds the per-layer KV cache of one batch; `forward` consumes new tokens and returns last logits."""

    def __init__(self, model):
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        self.model, self.rope = model, apply_rotary_pos_emb
        self.cache: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(model.model.layers)

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        """ids/pos [B, S]; key_mask [B, L_total] (1 = real token) over cache + new tokens."""
        inner = self.model.model
        B, S = ids.shape
        h = inner.embed_tokens(ids)
        cos, sin = inner.rotary_emb(h, pos)
        L = key_mask.shape[1]
        # query j (absolute column L-S+j) may see real keys at columns <= its own, and always
        # itself, so a padded query row is never empty (an empty row gives NaN that would
        # then reach real rows through 0·NaN in the value sum).
        col = torch.arange(L, device=ids.device)
        qcol = (L - S + torch.arange(S, device=ids.device))[:, None]
        allowed = (col[None, :] <= qcol)[None] & key_mask.bool()[:, None, :]
        allowed = (allowed | (col[None, :] == qcol)[None])[:, None]
        for i, layer in enumerate(inner.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            hd = attn.head_dim
            q = attn.q_proj(x).view(B, S, -1, hd)
            k = attn.k_proj(x).view(B, S, -1, hd)
            if hasattr(attn, "q_norm"):
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = q.transpose(1, 2), k.transpose(1, 2)
            v = attn.v_proj(x).view(B, S, -1, hd).transpose(1, 2)
            q, k = self.rope(q, k, cos, sin)
            if self.cache[i] is not None:
                k, v = torch.cat([self.cache[i][0], k], 2), torch.cat([self.cache[i][1], v], 2)
            self.cache[i] = (k, v)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=attn.scaling,
                                               enable_gqa=q.shape[1] != k.shape[1])
            h = h + attn.o_proj(o.transpose(1, 2).reshape(B, S, -1))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return self.model.lm_head(inner.norm(h[:, -1]))
