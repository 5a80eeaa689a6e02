"""Truthful gymnasium spaces for LLM text.

gymnasium's `Text` defaults to an alphanumeric charset and rejects anything else, while
LLM output is arbitrary unicode of any length. The Agon spaces use every Basic
Multilingual Plane character except surrogates, and a maximum length. Observations are
made to fit: characters outside the BMP become U+FFFD and text past `max_chars` is cut.
"""

from __future__ import annotations

from gymnasium import spaces

REPLACEMENT = "\ufffd"
CHARSET = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)


def text_space(max_chars: int) -> spaces.Text:
    return spaces.Text(max_length=max_chars, min_length=0, charset=CHARSET)


def fit_text(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars`, with non-BMP characters (and lone surrogates) replaced."""
    text = text[:max_chars]
    if text.isascii():
        return text
    return "".join(c if ord(c) < 0x10000 and not 0xD800 <= ord(c) <= 0xDFFF else REPLACEMENT for c in text)


def observation_space(max_chars: int) -> spaces.Dict:
    """role (0 drafter, 1 challenger), problem, summary, prompt and the prompt as chat messages."""
    text = text_space(max_chars)
    return spaces.Dict({
        "role": spaces.Discrete(2),
        "problem": text,
        "summary": text,
        "prompt": text,
        "messages": spaces.Sequence(spaces.Dict({"role": text_space(16), "content": text})),
    })
