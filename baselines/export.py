"""Export a trained run's models in formats other tools open: PEFT / vLLM adapters, plain checkpoints.

    python -m baselines.export runs/agon_grpo-agon-s0-... exported/            # A/, B/, export.json
    python -m baselines.export RUN OUT --base-name Qwen/Qwen3-0.6B            # adapters name their hub base
    python -m baselines.export RUN OUT --with-base                             # + OUT/base for vLLM (GGUF bases)
    python -m baselines.export RUN OUT --overwrite                             # replace an earlier export in OUT

A learner's checkpoint (`checkpoint/state.pt`) holds only the trainable tensors, to resume
or to reload through `baselines.runs`. This writes one directory per policy (`A/`, `B/`,
or `GRPO/`) that needs none of this project's code:

- **LoRA policies** (a pair on one frozen base): `adapter_config.json` +
  `adapter_model.safetensors` (+ the tokenizer), the layout both
  `PeftModel.from_pretrained(base, OUT/A)` and vLLM (`LoRARequest("A", 1, OUT/A)`,
  `vllm serve BASE --enable-lora --lora-modules A=OUT/A B=OUT/B`) read. Each directory is
  checked against what vLLM's loader refuses (`check_vllm_adapter`): no `modules_to_save`,
  no DoRA, no bias, only `lora_A`/`lora_B` weights of the target modules under the
  `base_model.model.` prefix. vLLM serves a base in transformers format, so a base read
  from GGUF (`smollm2`) needs `--with-base`, which writes it to `OUT/base` dequantized.
- **Full policies** (the tiny pair, trained fully): plain transformers checkpoints that
  `AutoModelForCausalLM.from_pretrained(OUT/A)` opens, with their character tokenizer
  (load it with `PreTrainedTokenizerFast.from_pretrained(OUT/A)`: for qwen model types some
  transformers 5 releases replace a custom tokenizer under `AutoTokenizer`).

`export.json` records each policy's format and the commands that load and serve it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from .policy import load_hf, save_hf
from .policy.adapters import check_vllm_adapter, vllm_max_lora_rank
from .policy.lora import LoraPolicy
from .runs import is_run_dir, load_run

VLLM_DEFAULT_MAX_RANK = 16  # `--max-lora-rank` must be raised above this for larger ranks


@dataclass
class Args:
    """Export a trained run's models: LoRA adapters for PEFT and vLLM, or full transformers checkpoints."""

    run: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")]
    """a learner's run directory (agon_grpo or grpo) with its final checkpoint"""
    out: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="OUT")]
    """output directory: one subdirectory per policy, plus export.json"""
    base_name: str | None = None
    """record this as the adapters' base (e.g. 'Qwen/Qwen3-0.6B') instead of the run's local path, so they load elsewhere"""
    with_base: bool = False
    """also write the frozen base as a transformers checkpoint in OUT/base (vLLM cannot serve a GGUF base with LoRA)"""
    overwrite: bool = False
    """replace an earlier export in OUT (a directory with export.json); without it a non-empty OUT is refused"""


def _set_base(adapter_dir: Path, base: str) -> None:
    cfg_file = adapter_dir / "adapter_config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg["base_model_name_or_path"] = base
    cfg_file.write_text(json.dumps(cfg, indent=2) + "\n")


def _serves_as_is(base: str) -> bool:
    """vLLM needs a transformers-format base: a hub name, or a local dir with config.json."""
    p = Path(base)
    return (p / "config.json").exists() if p.is_dir() else not p.exists()


def _check_out(out: Path, overwrite: bool) -> None:
    """Refuse a non-empty OUT: files of an earlier export there (a full model's weights beside
    new adapters, an old base/) would be read as part of this one."""
    if out.exists() and not out.is_dir():
        raise SystemExit(f"error: OUT {str(out)!r} is a file, not a directory")
    if not out.exists() or not any(out.iterdir()):
        return
    if not overwrite:
        raise SystemExit(f"error: OUT {str(out)!r} is not empty; choose an empty directory, or pass --overwrite to "
                         f"replace an earlier export there")
    if not (out / "export.json").exists():
        raise SystemExit(f"error: OUT {str(out)!r} holds files but no export.json, so it is not an earlier export; "
                         f"--overwrite only replaces exports, choose another directory")


def export_run(run_dir: str | Path, out: str | Path, base_name: str | None = None, with_base: bool = False,
               overwrite: bool = False) -> dict:
    """Write `run_dir`'s trained policies to `out` (see the module docstring); returns export.json's content."""
    run_dir, out = Path(run_dir), Path(out).expanduser()
    _check_out(out, overwrite)
    if not is_run_dir(run_dir):
        raise SystemExit(f"error: RUN_DIR {str(run_dir)!r} is not a learner's run directory (it needs config.json and "
                         f"metrics.jsonl, as agon_grpo and grpo write them)")
    policies = load_run(run_dir, device="cpu", backend="hf")
    adapters = {n: p for n, p in policies.items() if isinstance(p, LoraPolicy)}
    if not adapters and (base_name or with_base):
        raise SystemExit(f"error: --base-name / --with-base are for LoRA runs; {run_dir}'s policies are full "
                         f"models, each exported whole")
    if out.exists():  # an earlier export, checked above; removed only once this run's policies have loaded
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"run": str(run_dir), "policies": {}}
    run_base = None
    for name, pol in policies.items():
        pol.save(out / name)
        if name in adapters:
            cfg = check_vllm_adapter(out / name)
            run_base = cfg["base_model_name_or_path"]  # what the run read: --with-base writes this, not base_name
            if base_name:
                _set_base(out / name, base_name)
            manifest["policies"][name] = {"format": "peft-lora", "path": name, "r": cfg["r"],
                                          "base": base_name or run_base}
        else:
            manifest["policies"][name] = {
                "format": "transformers", "path": name,
                "load": f"AutoModelForCausalLM.from_pretrained('{out / name}'), "
                        f"PreTrainedTokenizerFast.from_pretrained('{out / name}')"}
    if adapters:
        manifest.update(_adapter_commands(out, manifest["policies"], adapters, with_base, run_base))
    (out / "export.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _adapter_commands(out: Path, entries: dict, adapters: dict, with_base: bool, run_base: str) -> dict:
    """The base vLLM serves (`run_base` written to OUT/base if asked) and the PEFT / vLLM commands."""
    base = entries[next(iter(adapters))]["base"]
    if with_base:
        m, tok = load_hf(run_base, "cpu")  # the frozen base again, as the run read it (a GGUF is dequantized)
        save_hf(m, tok, out / "base")
        base = str(out / "base")
    rank = max(entries[n]["r"] for n in adapters)
    modules = " ".join(f"{n}={out / n}" for n in adapters)
    serve = (f"vllm serve {base} --enable-lora --max-loras {len(adapters)} --lora-modules {modules}"
             + (f" --max-lora-rank {vllm_max_lora_rank(rank)}" if rank > VLLM_DEFAULT_MAX_RANK else ""))
    first = next(iter(adapters))
    return {"base": base, "serves_as_is": _serves_as_is(base),
            "peft": f"PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained('{base}'), '{out / first}')",
            "vllm_serve": serve}


def main(args: Args) -> dict:
    manifest = export_run(args.run, args.out, args.base_name, args.with_base, args.overwrite)
    for name, entry in manifest["policies"].items():
        print(f"{name}: {entry['format']} in {Path(args.out) / entry['path']}")
    if "vllm_serve" in manifest:
        print(f"PEFT: {manifest['peft']}\nvLLM: {manifest['vllm_serve']}")
        if not manifest["serves_as_is"]:
            print(f"note: vLLM cannot serve the base {manifest['base']} as it is (not transformers format); "
                  f"rerun with --with-base")
    print(f"export manifest: {Path(args.out) / 'export.json'}")
    return manifest


if __name__ == "__main__":
    main(tyro.cli(Args))
