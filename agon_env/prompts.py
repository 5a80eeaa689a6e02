"""Prompt templates: what each role is asked, as a plain string and as chat messages.

The challenger reads the draft's summary *before* the problem: a prototype found that
layout (draft first, problem last, as in the drafter's own prompt) was the one a small
model learned to use.
"""

from __future__ import annotations

from dataclasses import dataclass

FULL_DRAFT = ("full", "The whole draft, its thinking included, is below, and it may be wrong.\n\nDraft:")
# The challenger is told what of the draft it reads, by summary mode ("paper", "with_answer", "full").
GENERIC_DISCLOSURE = (
    ("paper", "its thinking and final answer are hidden"),
    ("with_answer", "its thinking is hidden; its final answer is shown"),
    ("full", "nothing of it is hidden"),
)

INSTRUCTIONS = (
    "Think step by step inside <think>...</think>. Then write a short summary of your "
    "solution for a reader who will not see your thinking, and give only the final "
    "answer inside <answer>...</answer>."
)
CODE_INSTRUCTIONS = (
    "Think step by step inside <think>...</think>. Then describe your approach for a reader "
    "who will not see your thinking or your code, and give the whole Python 3 program as one "
    "```python fenced block inside <answer>...</answer>."
)


@dataclass(frozen=True)
class PromptTemplate:
    """Format strings for both roles. Fields: `{question}`, and for the challenger `{summary}` and
    `{disclosure}`, what of the draft it reads: `disclosure[summary mode]`."""

    name: str
    drafter: str
    challenger: str
    system: str | None = None
    disclosure: tuple[tuple[str, str], ...] = GENERIC_DISCLOSURE

    def drafter_prompt(self, question: str) -> str:
        return self.drafter.format(question=question)

    def challenger_prompt(self, question: str, summary: str, mode: str = "paper") -> str:
        """The challenger's prompt for a `summary` made in summary `mode`."""
        said = dict(self.disclosure)
        if mode not in said:
            raise ValueError(f"template {self.name!r} has no disclosure for summary mode {mode!r}; it has {sorted(said)}")
        return self.challenger.format(question=question, summary=summary, disclosure=said[mode])

    def messages(self, prompt: str) -> tuple[dict[str, str], ...]:
        """The prompt as chat messages (a system turn if the template has one, then the user turn)."""
        user = ({"role": "user", "content": prompt},)
        return (({"role": "system", "content": self.system},) + user) if self.system else user


TEMPLATES = {
    # For instruction-tuned LLMs (Qwen3, SmolLM2): full instructions in the user turn.
    "default": PromptTemplate(
        name="default",
        drafter=INSTRUCTIONS + "\n\nProblem: {question}",
        challenger="Another solver wrote a draft. {disclosure}\n{summary}\n\n" + INSTRUCTIONS + "\n\nProblem: {question}",
        disclosure=(
            ("paper", "Its summary is below; its thinking and final answer are hidden, and it may be wrong.\n\n"
                      "Draft summary:"),
            ("with_answer", "Its summary and final answer are below; its thinking is hidden, and it may be "
                            "wrong.\n\nDraft summary and answer:"),
            FULL_DRAFT,
        ),
    ),
    # For code problems: the answer block holds the program; the challenger sees the approach.
    "code": PromptTemplate(
        name="code",
        drafter=CODE_INSTRUCTIONS + "\n\nProblem:\n{question}",
        challenger="Another programmer wrote a draft. {disclosure}\n{summary}\n\n" + CODE_INSTRUCTIONS + "\n\nProblem:\n{question}",
        disclosure=(
            ("paper", "Its description is below; its thinking and its code are hidden, and it may be wrong.\n\n"
                      "Draft description:"),
            ("with_answer", "Its description and its code are below; its thinking is hidden, and it may be "
                            "wrong.\n\nDraft description and code:"),
            FULL_DRAFT,
        ),
    ),
    # For the tiny character-level models: short, so prompts cost few tokens.
    "compact": PromptTemplate(
        name="compact",
        drafter="Q:{question}\nA:",
        challenger="D:{summary}\nQ:{question}\nA:",
    ),
}


def get_template(template: str | PromptTemplate) -> PromptTemplate:
    if isinstance(template, PromptTemplate):
        return template
    try:
        return TEMPLATES[template]
    except KeyError:
        raise ValueError(f"template must be one of {sorted(TEMPLATES)} or a PromptTemplate, got {template!r}") from None
