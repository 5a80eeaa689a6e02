"""Splice the generated benchmark tables (benchmarks/results/*.md) into README.md.

    python -m benchmarks.update_readme

The README's numbers come only from these files, between the `generated` markers.
"""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.report import RESULTS

README = Path(__file__).resolve().parent.parent / "README.md"
ORDER = ["env_throughput", "grading_throughput", "discrete_throughput", "sandbox_overhead", "policy_memory",
         "peak_memory", "policy_step", "step_profile", "speedups", "train_vs_trl", "pair_vs_comlrl", "pair_vs_comlrl_smollm2",
         "distributed", "server_vs_hf", "gpu_check", "train_vs_trl_gpu", "step_profile_gpu", "distributed_gpu",
         "headroom", "regimes", "learners", "replicate", "replicate_variant"]
START, END = "<!-- generated: python -m benchmarks.update_readme -->", "<!-- end generated -->"


def section(name: str) -> str:
    md = (RESULTS / f"{name}.md").read_text().strip()
    md = re.sub(r"^# (.*)$", r"### \1", md, count=1, flags=re.M)  # demote the file's title
    md = re.sub(r"\]\(([^/):]+\.png)\)", r"](benchmarks/results/\1)", md)  # images sit beside the .md
    return md + f"\n\n(from `benchmarks/results/{name}.md`)"


def main() -> None:
    names = [n for n in ORDER if (RESULTS / f"{n}.md").exists()]
    names += sorted(p.stem for p in RESULTS.glob("*.md") if p.stem not in ORDER)
    text = README.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{README}: missing the markers {START!r} ... {END!r}")
    body = "\n\n".join(section(n) for n in names)
    head, rest = text.split(START, 1)
    README.write_text(head + START + "\n" + body + "\n" + END + rest.split(END, 1)[1])
    print(f"README.md: spliced {', '.join(names)}")


if __name__ == "__main__":
    main()
