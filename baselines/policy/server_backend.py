"""Server backend: generation through vLLM OpenAI-compatible servers, training in-process.

Each `ServerPolicy` wraps a trainable HF `LoraPolicy`: `token_logprobs`, `parameters`,
`save` stay in this process, while `generate` sends one `/v1/completions` request per
prompt to a pool of `vllm serve` processes (one or more machines), each started as

    VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora --max-loras 2 --max-lora-rank R

(R: the adapters' rank rounded up to one vLLM accepts, `adapters.vllm_max_lora_rank`: 4 → 8, 16 → 16.)
Requests: the prompt goes as token ids (the chat template applied here, as the HF backend
does), with `n`, `temperature`, `top_p`, `max_tokens`, a per-prompt `seed` (`child_seed(seed, i)`,
as the in-process vLLM backend), `stop_token_ids` (the HF sampler's EOS set), `logprobs: 1`,
`return_token_ids` and `return_tokens_as_token_ids`. The completion ids are the server's
`token_ids` (or, on a server without that field, the `token_id:N` strings of
`logprobs.tokens`), never re-tokenised text; the text is decoded here from those ids.

Adapter sync, as the vLLM engine backend: before sampling, a policy compares its trainable
tensors' version counters (bumped by every optimizer step) with the ones it last sent. If
they moved, it saves the adapter to `<adapter_dir>/<name>-<run tag>-v<k>` (PEFT format),
POSTs `/v1/load_lora_adapter` to every server, then `/v1/unload_lora_adapter` for the
previous version, whose directory it deletes; later requests name the new adapter. The run
tag keeps two runs (or a rerun against still-running servers) from clashing on a name.
The learners call `publish()` (that is, `sync()`) right after every optimizer step.

Under torchrun every rank trains the same adapters (their gradients are all-reduced), so rank 0
alone saves and loads each version, under a run tag and in an adapter dir it chose for all, while
the others wait for it and then name the same version; each rank sends its own share of the
step's requests to the pool. Ranks reach `sync` together: after each step, and at start.

Load balancing: requests go round-robin over the servers, several in flight at once. A
request that fails (connection error, timeout, HTTP 5xx) is retried on the next server,
up to `retries` times; each failure is counted in `ServerPool.failures` and logged with the
server's URL. When every attempt fails the call raises `ServerError` naming the servers;
a request never comes back with fewer completions than asked.

Log-probs: vLLM's default `--logprobs-mode raw_logprobs` returns the log-softmax of raw
logits, this project's convention (`base.py`). `logprob_gap` measures the server's numbers
against the in-process recompute; `baselines.grpo_loss.truncated_is_weights` (`--is-cap`)
corrects the update for the gap, as TRL's `vllm_importance_sampling_correction` does.
Only the standard library is used (urllib, concurrent.futures).
"""

from __future__ import annotations

import http.client
import itertools
import json
import logging
import secrets
import shutil
import socket
import tempfile
import threading
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

import torch

from .. import distributed as dist
from .adapters import vllm_max_lora_rank
from .base import Generation, Policy, SamplerPolicy, SamplingParams, child_seed

log = logging.getLogger("agon.policy")
LAUNCH = ("VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve {base} --enable-lora --max-loras 2 "
          "--max-lora-rank {rank} --port PORT")


class ServerError(RuntimeError):
    """A vLLM server could not do what was asked; the message names the server(s) and the fix."""


class _Failed(Exception):
    """One HTTP call failed: `status` is None for a connection error or timeout."""

    def __init__(self, url: str, status: int | None, message: str):
        super().__init__(f"{url}: {'HTTP ' + str(status) if status else 'no response'}: {message}")
        self.url, self.status, self.message = url, status, message

    @property
    def retriable(self) -> bool:
        return self.status is None or self.status >= 500


def _error_message(body: str) -> str:
    """The message of a vLLM error body ({"message"} or {"error": {"message"}}), else the body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:500]
    if isinstance(data, dict):
        err = data.get("error") if isinstance(data.get("error"), dict) else data
        return str(err.get("message") or err.get("detail") or data)[:500]
    return str(data)[:500]


def _http(url: str, path: str, payload: dict | None, timeout: float) -> str:
    """GET (no payload) or POST JSON to `url + path`; the body, or `_Failed`."""
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"},
                                 method="GET" if payload is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read().decode()
    except urllib.error.HTTPError as e:
        raise _Failed(url, e.code, _error_message(e.read().decode(errors="replace"))) from None
    except (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError) as e:
        raise _Failed(url, None, str(getattr(e, "reason", e))) from None


# ---------------------------------------------------------------- requests and responses (pure)
def completion_request(model: str, prompt_ids: list[int], n: int, params: SamplingParams, seed: int | None,
                       stop_token_ids: Sequence[int] = ()) -> dict:
    """The `/v1/completions` body for one prompt given as token ids (greedy is temperature 0)."""
    greedy = params.greedy or params.temperature <= 0
    body = {"model": model, "prompt": [int(t) for t in prompt_ids], "n": n,
            "temperature": 0.0 if greedy else params.temperature, "top_p": 1.0 if greedy else params.top_p,
            "max_tokens": params.max_new_tokens, "logprobs": 1, "return_token_ids": True,
            "return_tokens_as_token_ids": True, "skip_special_tokens": True,
            "stop_token_ids": sorted(int(t) for t in stop_token_ids)}
    if seed is not None:
        body["seed"] = int(seed)
    return body


def _choice_ids(choice: dict) -> list[int]:
    if choice.get("token_ids") is not None:
        return [int(t) for t in choice["token_ids"]]
    tokens = (choice.get("logprobs") or {}).get("tokens") or []
    if not all(isinstance(t, str) and t.startswith("token_id:") for t in tokens):
        raise ServerError("the server returned neither token_ids nor 'token_id:N' tokens; it needs vLLM's "
                          "return_token_ids or return_tokens_as_token_ids (vLLM >= 0.10.2 has both)")
    return [int(t.split(":", 1)[1]) for t in tokens]


def to_generations(prompt: str, prompt_ids: list[int], body: dict, n: int, decode, url: str = "",
                   stop_token_ids: Sequence[int] = ()) -> list[Generation]:
    """A `/v1/completions` response to `n` `Generation`s, or ServerError if any part is missing."""
    choices = sorted(body.get("choices") or [], key=lambda c: c.get("index", 0))
    if len(choices) != n:
        raise ServerError(f"server {url} returned {len(choices)} completions for a request of n={n}")
    out = []
    for c in choices:
        ids = _choice_ids(c)
        lps = (c.get("logprobs") or {}).get("token_logprobs")
        if lps is None or len(lps) != len(ids) or any(x is None for x in lps):
            raise ServerError(f"server {url} returned {0 if lps is None else len(lps)} log-probs for {len(ids)} tokens")
        # vLLM checks the length cap before EOS: a stop token drawn as the last allowed token says "length"
        finished = c.get("finish_reason") == "stop" or bool(ids) and ids[-1] in stop_token_ids
        out.append(Generation(prompt, decode(ids), list(prompt_ids), ids, [float(x) for x in lps], finished))
    return out


# ---------------------------------------------------------------- the servers
class ServerPool:
    """The vLLM servers one run generates on: reachability at start, round-robin with retries,
    adapter loading on every server."""

    def __init__(self, urls: Sequence[str], launch: str = LAUNCH.format(base="BASE", rank="R"),
                 timeout: float = 600.0, retries: int = 3, concurrency: int = 64, check_timeout: float = 10.0):
        self.urls = [u.strip().rstrip("/").removesuffix("/v1") for u in urls if u.strip()]
        if not self.urls:
            raise ValueError("the server backend needs at least one server URL")
        self.launch, self.timeout, self.retries, self.concurrency = launch, timeout, retries, concurrency
        self.failures = 0
        self.failures_by_server: Counter[str] = Counter()
        self._lock, self._next = threading.Lock(), itertools.count()
        self.models: dict[str, list[dict]] = {}
        for url in self.urls:
            try:
                self.models[url] = json.loads(_http(url, "/v1/models", None, check_timeout)).get("data", [])
            except (_Failed, ValueError) as e:
                why = e.message if isinstance(e, _Failed) else f"GET /v1/models is not JSON: {e}"
                raise ServerError(f"vLLM server {url} is unreachable ({why}); start it with\n    {launch}\n"
                                  f"and pass its address with --servers") from None
        log.info("server backend: %d server(s) %s serving %s", len(self.urls), self.urls,
                 sorted({m.get("id", "?") for ms in self.models.values() for m in ms}))

    def _count_failure(self, err: _Failed) -> None:
        with self._lock:
            self.failures += 1
            self.failures_by_server[err.url] += 1

    def complete(self, bodies: list[dict]) -> list[tuple[dict, str]]:
        """(response, server URL) for each `/v1/completions` body, in order; several in flight."""
        firsts = [next(self._next) % len(self.urls) for _ in bodies]
        if len(bodies) <= 1:  # no pool for one, nor for none (a pool needs a worker)
            return [self._complete_one(b, f) for b, f in zip(bodies, firsts)]
        with ThreadPoolExecutor(max_workers=min(len(bodies), self.concurrency)) as ex:
            return list(ex.map(self._complete_one, bodies, firsts))

    def _complete_one(self, body: dict, first: int) -> tuple[dict, str]:
        errors: dict[str, str] = {}
        for attempt in range(1 + self.retries):
            url = self.urls[(first + attempt) % len(self.urls)]
            try:
                reply = _http(url, "/v1/completions", body, self.timeout)
                try:
                    return json.loads(reply), url
                except ValueError:  # e.g. a proxy's error page: a fault of that server, retried elsewhere
                    raise _Failed(url, None, f"reply is not JSON: {reply[:200]!r}") from None
            except _Failed as e:
                if not e.retriable:
                    raise ServerError(f"vLLM server {url} refused a completion request for {body.get('model')!r}: "
                                      f"HTTP {e.status}: {e.message}") from None
                self._count_failure(e)
                errors[url] = str(e)
                nxt = self.urls[(first + attempt + 1) % len(self.urls)]
                log.warning("server backend: request failed on %s (%s); %s", url, e.message,
                            f"retrying on {nxt}" if attempt < self.retries else "no retries left")
        raise ServerError(f"every vLLM server failed a completion request ({1 + self.retries} attempts): "
                          + "; ".join(errors.values()))

    def load_adapter(self, name: str, path: Path) -> None:
        """Register the adapter saved at `path` as `name` on every server."""
        for url in self.urls:
            try:
                _http(url, "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)}, self.timeout)
            except _Failed as e:
                if str(path) in e.message or "No adapter found" in e.message:
                    raise ServerError(
                        f"vLLM server {url} cannot read the adapter at {path} ({e.message}): the adapter dir "
                        f"(--adapter-dir {path.parent}) must be on a filesystem shared with the servers, at the "
                        f"same path on every machine") from None
                if e.status == 404:
                    raise ServerError(f"vLLM server {url} has no /v1/load_lora_adapter ({e.message}): start it with "
                                      f"runtime LoRA updating enabled:\n    {self.launch}") from None
                raise ServerError(f"vLLM server {url} could not load adapter {name!r} from {path}: {e}; "
                                  f"it must be started as\n    {self.launch}") from None

    def unload_adapter(self, name: str) -> None:
        """Drop `name` from every server; a server that fails is logged, not fatal (the name is never reused)."""
        for url in self.urls:
            try:
                _http(url, "/v1/unload_lora_adapter", {"lora_name": name}, self.timeout)
            except _Failed as e:
                log.warning("server backend: could not unload adapter %r from %s: %s", name, url, e.message)


# ---------------------------------------------------------------- the policy
class ServerPolicy(SamplerPolicy):
    """Samples on the server pool under its current adapter; trains and saves through the HF policy it wraps."""

    def __init__(self, hf, pool: ServerPool, adapter_dir: str | Path, tag: str = ""):
        self.hf, self.pool, self.name, self.template = hf, pool, hf.name, hf.template
        self.adapter_dir, self.tag = Path(adapter_dir), tag or secrets.token_hex(3)
        self.served: str | None = None
        """the adapter name the servers hold for this policy's current weights"""
        self.version = 0
        self._path: Path | None = None
        self._synced: tuple | None = None
        self.stop_token_ids = sorted(hf.eos)

    def _weights(self) -> tuple:
        return tuple(p._version for p in self.hf.parameters())

    def sync(self) -> str:
        """Send the adapter to every server if its weights changed since the last send; the served name.
        Under torchrun rank 0 sends it and every rank waits for that (all ranks' weights are the same)."""
        v = self._weights()
        if self.served is not None and v == self._synced:
            return self.served
        first = self.served is None
        self.version += 1  # used up even if the send fails: some servers may hold the name by then
        name = f"{self.name}-{self.tag}-v{self.version}"
        path = self.adapter_dir / name
        failed = None
        if dist.is_main():
            try:
                self._send(name, path, first)
            except Exception as e:  # the other ranks must hear of it, not wait for ever
                failed = e
        why = dist.from_main(None if failed is None else f"{type(failed).__name__}: {failed}")  # every rank waits here
        if failed is not None:
            raise failed
        if why:
            raise ServerError(f"rank 0 could not send adapter {name!r} to the servers: {why}")
        old, old_path = self.served, self._path
        self.served, self._path, self._synced = name, path, v
        if old is not None and dist.is_main():
            self.pool.unload_adapter(old)
            shutil.rmtree(old_path, ignore_errors=True)
        log.debug("server backend: %s now served as %s", self.name, name)
        return name

    def _send(self, name: str, path: Path, first: bool) -> None:
        self.hf.save(path)
        if first:
            from .adapters import check_vllm_adapter  # what vLLM's loader refuses, named before a server is asked

            check_vllm_adapter(path)
        self.pool.load_adapter(name, path)

    def publish(self) -> None:
        self.sync()

    def generate(self, prompts, n=1, params=SamplingParams(), seed=None):
        if isinstance(prompts, str):
            raise TypeError("generate takes a list of prompt strings, got one str")
        model = self.sync()
        ids = [self.hf.encode_prompt(p) for p in prompts]
        bodies = [completion_request(model, i, n, params, None if seed is None else child_seed(seed, k),
                                     self.stop_token_ids)
                  for k, i in enumerate(ids)]
        return [to_generations(p, i, body, n, self.hf.decode, url, self.stop_token_ids)
                for p, i, (body, url) in zip(prompts, ids, self.pool.complete(bodies))]



@torch.no_grad()
def logprob_gap(policy: Policy, gens: Sequence[Generation] | Sequence[Sequence[Generation]]) -> dict[str, float]:
    """{mean, max, tokens}: |sampler log-prob − in-process `token_logprobs`| over every completion token."""
    flat = [g for row in gens for g in row] if gens and isinstance(gens[0], (list, tuple)) else list(gens)
    flat = [g for g in flat if g.completion_ids]
    if not flat:
        return {"mean": 0.0, "max": 0.0, "tokens": 0}
    lp, mask = policy.token_logprobs([g.prompt_ids for g in flat], [g.completion_ids for g in flat])
    sampled = torch.zeros_like(lp)
    for i, g in enumerate(flat):
        sampled[i, :len(g.logprobs)] = torch.tensor(g.logprobs, dtype=lp.dtype)
    gap = (lp - sampled.to(lp.device)).abs()[mask.bool()]
    return {"mean": float(gap.mean()), "max": float(gap.max()), "tokens": int(gap.numel())}


def wrap_server(policies: tuple, model: str, servers: Sequence[str], adapter_dir: str | Path | None = None,
                **pool_kw) -> tuple:
    """Each policy a `ServerPolicy` on one pool of `servers`, its adapter already loaded on every server
    (so an unreachable server or an adapter dir the servers cannot see fails here, before any work)."""
    from .lora import LoraPolicy

    if not all(isinstance(p, LoraPolicy) for p in policies) or len({id(p.model) for p in policies}) != 1:
        raise ValueError("the server backend serves LoRA adapters on one shared base (the servers hold the base); "
                         "full models such as the tiny pair need --backend hf")
    first = policies[0]
    rank = vllm_max_lora_rank(max(c.r for c in first.model.peft_config.values()))
    base = getattr(first.model.peft_config[first.adapter], "base_model_name_or_path", None) or model
    pool = ServerPool(servers, launch=LAUNCH.format(base=base, rank=rank), **pool_kw)
    bases = {v for ms in pool.models.values() for m in ms if not m.get("parent") for v in (m.get("id"), m.get("root"))}
    if base not in bases:
        log.warning("server backend: the servers serve %s, not %s; they must hold the same base weights",
                    sorted(b for b in bases if b), base)
    if adapter_dir is None:
        adapter_dir = dist.from_main(tempfile.mkdtemp(prefix="agon-server-adapters-") if dist.is_main() else None)
        log.warning("server backend: adapters go to %s, which only servers on this machine can read "
                    "(--adapter-dir sets a shared path)", adapter_dir)
    tag = dist.from_main(secrets.token_hex(3))  # one name per adapter version for every rank
    wrapped = tuple(ServerPolicy(p, pool, adapter_dir, tag) for p in policies)
    for w in wrapped:
        w.sync()
    log.info("server backend: adapters %s loaded on %s from %s", [w.served for w in wrapped], pool.urls, adapter_dir)
    return wrapped
