"""A math-verify worker process: reads `[gold, pred]` JSON lines, writes `[verdict]` lines.

Run by `MathGrader` as `python -m agon_env._math_worker FLOAT_ROUNDING`; the parent
bounds each call's time and kills the process on overrun.
"""

import json
import logging
import sys


def main() -> None:
    logging.disable(logging.WARNING)  # math-verify logs whole inputs on failure
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    float_rounding = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    cfg = [LatexExtractionConfig(), ExprExtractionConfig()]

    def parsed(s: str):
        return parse(s if "\\boxed" in s else "\\boxed{" + s + "}", extraction_config=cfg, parsing_timeout=None)

    sys.stdout.write('["ready"]\n')
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            gold, pred = json.loads(line)
            g, p = parsed(gold), parsed(pred)
            ok = bool(g) and bool(p) and verify(g, p, float_rounding=float_rounding, timeout_seconds=None)
            out = "correct" if ok else "wrong"
        except Exception:  # noqa: BLE001 - an unparsable answer is a wrong answer
            out = "error"
        sys.stdout.write(json.dumps([out]) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
