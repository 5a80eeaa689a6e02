"""problems: checkable problems for the Agon game, in one record shape.

Sources (`python -m problems list`)
-----------------------------------
- ``arith``: a bundled procedural arithmetic set (``problems/data/arith.jsonl``), ready
  without generation. Splits train / validation / test never share a question (as text: some
  held-out problems have a train twin with swapped operands, see problems/README.md).
- ``deepmath``: DeepMath-103K from a local parquet/JSONL file or directory, with the
  paper's hard split (difficulty 8, yes/no/true/false answers dropped) and a deterministic
  3,000 / 300 train / held-out split. See `problems.deepmath`.
- ``reasoning_gym``: the optional `reasoning-gym` generators (``pip install agon[reasoning-gym]``);
  grading stays ours. See `problems.rgym`.
- any path to a Problem JSONL file.

Bad rows raise one `DataError` that lists each as ``FILE line N: what was wrong``;
``load(..., skip_bad=True)`` loads the good rows and warns (`SkippedRows`) how many it left out.

    >>> from problems import load
    >>> hard_test = load("arith", split="test", tier="hard")   # 600 problems

The arith tiers
---------------
Difficulty 1 / 2 / 3, ``metadata["tier"]`` easy / medium / hard, families in equal shares.
Per tier the bundled set has 2,000 train, 400 validation and 600 test problems; more
training problems come from ``generate_arith(n, seed=1, exclude=held-out questions)``
(up to about 5,000 easy and 2,500 hard per tier: those families' question spaces are small).

======  ==========  ===================  ================================================================
tier    family      question             worked solution
======  ==========  ===================  ================================================================
easy    add2        ``59+63``            ``<think>50+60=110 9+3=12 110+12=122</think>50+60=110, 9+3=12<answer>122</answer>``
easy    sub2        ``71-55``            ``<think>70-50=20 1-5=-4 20-4=16</think>70-50=20, 1-5=-4<answer>16</answer>``
medium  chain       ``70+55-50+80``      ``<think>70+55=125 125-50=75 75+80=155</think>70+55-50=75<answer>155</answer>``
medium  sum_times   ``(61+32)*9``        ``<think>61+32=93 90*9=810 3*9=27 810+27=837</think>61+32=93<answer>837</answer>``
medium  linear      ``7x+34=97``         ``<think>97-34=63 63/7=9</think>7x=63<answer>9</answer>``
hard    fraction    ``2/3+5/6``          ``<think>3*6=18 2*6=12 5*3=15 12+15=27 27/18=3/2</think>den 18, 2/3=12/18<answer>3/2</answer>``
hard    mul_mod     ``(29*4) mod 5``     ``<think>20*4=80 9*4=36 80+36=116 23*5=115 116-115=1</think>29*4=116<answer>1</answer>``
hard    linear2     ``6x-7=2x+37``       ``<think>6x-2x=4x 37+7=44 44/4=11</think>4x=44<answer>11</answer>``
======  ==========  ===================  ================================================================

Medium and hard chain 3-5 steps with multi-digit products, long division and fraction
reduction. Measured on the shipped ~1.0M-parameter character pair after its warm start
(greedy, test split; ``baselines/policy/tiny_pair/README.md``): easy 99.5-100%, medium
41-45%, hard 31-38.5%, so hard sits in the 30-60% single-model band it was designed for.
Re-measure for another model. A constant guess scores about 7% on hard (``mul_mod``
answers lie in 0..8). Answers are integers or reduced
fractions "p/q", so graders decide them on the exact fast path. Questions are at most 40
characters and worked solutions at most 120 (the hard tier's longest is about 100).

The summary channel (why the set tests Agon, not a leak)
--------------------------------------------------------
The challenger reads only the summary: the text between ``</think>`` and ``<answer>``.
A prototype on written-out addition leaked the answer through the visible work, so the
challenger learned to copy. Here every summary

- states a useful intermediate (the partial sums, ``7x=63``, the common denominator and one
  converted fraction, the product before the modulus), so a correct draft helps;
- never states the answer: no number in a summary that the question lacks equals the
  answer in value (instances that would are redrawn, and a test checks every problem);
- leaves at least one real computation (a sum, a product, a division, a reduction) between
  the summary and the answer, so copying a string is never enough;
- is computed from the draft's own intermediates, so a wrong draft shows a plausibly wrong
  intermediate (a carry slip, an off-by-one) that the challenger must check, not trust.
  `problems.arith.wrong_work(..., visible=True)` builds such consistent wrong solutions
  synthetically, to supplement warm-start examples built from a model's own wrong drafts.
"""

from .generate import generate_arith
from .record import Problem, read_jsonl, write_jsonl
from .rows import DataError, SkippedRows
from .sources import SOURCES, load

__all__ = ["DataError", "Problem", "SOURCES", "SkippedRows", "generate_arith", "load", "read_jsonl", "write_jsonl"]
