"""The server backend against real HTTP servers: a stand-in for `vllm serve` in another process.

Run as a script, this file is that stand-in: `python test_server_backend.py K` serves K
OpenAI-style servers on 127.0.0.1 (ports printed as one JSON line), each with its own
adapters, answering /v1/models, /v1/completions (prompt as token ids, n, temperature,
top_p, max_tokens, seed, logprobs, return_token_ids, return_tokens_as_token_ids),
/v1/load_lora_adapter and /v1/unload_lora_adapter the way vLLM does, by sampling the real
tiny model `tiny:a` (plus the loaded PEFT adapter) with the project's own sampler. So the
tokens and log-probs the backend gets are real. `/_test/fault` makes a server fail the
next requests (HTTP 500, or a dropped connection) or act as if it cannot see adapter
paths; `/_test/log` lists what it was asked.
"""

import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
import torch

from baselines.grpo_loss import policy_loss, truncated_is_weights
from baselines.policy import SamplingParams
from baselines.policy.lora import lora_pair
from baselines.policy.server_backend import ServerError, ServerPolicy, ServerPool, completion_request, logprob_gap, wrap_server
from baselines.policy.tiny import load_tiny

ROOT = Path(__file__).resolve().parents[3]
PROMPTS = ["What is 2 + 3?", "What is 10 + 7?", "What is 41 + 1?"]


# ---------------------------------------------------------------- the stand-in server (run as a script)
def serve(k: int) -> None:  # pragma: no cover - runs in the server process
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from peft import PeftModel

    from baselines.policy.hf import HFPolicy
    from baselines.policy.sampling import sample

    torch.set_num_threads(1)
    base, tok = load_tiny("a")
    ref = HFPolicy(base, tok)
    lock = threading.Lock()

    def error(status, message, kind="NotFoundError"):
        return status, {"object": "error", "message": message, "type": kind, "param": None, "code": status}

    class Server:
        def __init__(self):
            self.adapters, self.log = {}, []
            self.fault = {"status": None, "count": 0, "hide_adapters": False}

        def models(self, _):
            cards = [{"id": "tiny:a", "object": "model", "root": "tiny:a", "parent": None}]
            cards += [{"id": n, "object": "model", "root": p, "parent": "tiny:a"} for n, (p, _) in self.adapters.items()]
            return 200, {"object": "list", "data": cards}

        def load(self, body):
            name, path = body.get("lora_name"), body.get("lora_path")
            if name in self.adapters:
                return error(400, f"The lora adapter '{name}' has already been loaded.", "InvalidUserInput")
            if self.fault["hide_adapters"] or not os.path.exists(os.path.join(path, "adapter_config.json")):
                return error(404, f"Loading lora {name} failed: No adapter found for {path}")
            m, _ = load_tiny("a")
            self.adapters[name] = (path, PeftModel.from_pretrained(m, path).eval())
            return 200, f"Success: LoRA adapter '{name}' added successfully."

        def unload(self, body):
            if self.adapters.pop(body.get("lora_name"), None) is None:
                return error(404, f"The lora adapter '{body.get('lora_name')}' cannot be found.")
            return 200, f"Success: LoRA adapter '{body['lora_name']}' removed successfully."

        def complete(self, body):
            name = body.get("model")
            if name != "tiny:a" and name not in self.adapters:
                return error(404, f"The model `{name}` does not exist.")
            model = base if name == "tiny:a" else self.adapters[name][1]
            temp = body.get("temperature", 1.0)
            params = SamplingParams(temperature=temp, top_p=body.get("top_p", 1.0),
                                    max_new_tokens=body.get("max_tokens", 16), greedy=temp == 0)
            gen = torch.Generator().manual_seed(body["seed"] if body.get("seed") is not None else 12345)
            eos = ref.eos | set(body.get("stop_token_ids") or [])
            with lock, torch.no_grad():
                rows = sample(model, [body["prompt"]] * body.get("n", 1), params, eos, ref.pad, gen)
            choices = []
            for i, (ids, lps, finished) in enumerate(rows):
                as_ids = body.get("return_tokens_as_token_ids")
                tokens = [f"token_id:{t}" if as_ids else tok.decode([t]) for t in ids]
                logprobs = {"text_offset": [], "token_logprobs": lps, "tokens": tokens,
                            "top_logprobs": [{t: lp} for t, lp in zip(tokens, lps)]}
                choice = {"index": i, "text": tok.decode(ids, skip_special_tokens=True),
                          "finish_reason": "stop" if finished else "length", "stop_reason": None,
                          "logprobs": logprobs if body.get("logprobs") is not None else None}
                if body.get("return_token_ids"):
                    choice["token_ids"] = ids
                choices.append(choice)
            return 200, {"id": "cmpl-x", "object": "text_completion", "model": name, "choices": choices}

    def handler_for(state: Server):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, payload):
                data = (json.dumps(payload) if not isinstance(payload, str) else payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if not isinstance(payload, str) else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models":
                    return self._send(*state.models(None))
                if self.path == "/_test/log":
                    return self._send(200, state.log)
                self._send(404, {"detail": "Not Found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/_test/fault":
                    state.fault.update(body)
                    return self._send(200, state.fault)
                routes = {"/v1/completions": state.complete, "/v1/load_lora_adapter": state.load,
                          "/v1/unload_lora_adapter": state.unload}
                if self.path not in routes:
                    return self._send(404, {"detail": "Not Found"})
                state.log.append({"path": self.path, "model": body.get("model") or body.get("lora_name")})
                if self.path == "/v1/completions" and state.fault["count"] > 0:
                    state.fault["count"] -= 1
                    if state.fault["status"] == "drop":
                        self.close_connection = True
                        return  # no response at all: the client sees the connection close
                    if state.fault["status"] == "html":
                        return self._send(200, "<html>502 Bad Gateway</html>")  # a proxy's page, not JSON
                    return self._send(*error(state.fault["status"], "injected failure", "InternalServerError"))
                self._send(*routes[self.path](body))

        return Handler

    servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler_for(Server())) for _ in range(k)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(json.dumps([s.server_address[1] for s in servers]), flush=True)
    threading.Event().wait()


if __name__ == "__main__":  # pragma: no cover - started by the `urls` fixture, with PYTHONPATH at the repo root
    serve(int(sys.argv[1]))


# ---------------------------------------------------------------- the tests

PARAMS = SamplingParams(temperature=1.0, max_new_tokens=12)


def _control(url, path, payload=None):
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def urls():
    err = open(os.devnull, "w")
    proc = subprocess.Popen([sys.executable, __file__, "2"], cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        pytest.fail("the stand-in server process exited before it was ready")
    yield [f"http://127.0.0.1:{p}" for p in json.loads(line)]
    proc.kill()
    proc.wait()
    err.close()


@pytest.fixture(scope="module")
def pair(urls, tmp_path_factory):
    """A LoRA pair on tiny:a (B's adapter is non-zero), generating through both servers."""
    base, tok = load_tiny("a")
    a, b = lora_pair(base, tok, rank=4, b_init_std=0.2, seed=0)
    return wrap_server((a, b), "tiny:a", urls, tmp_path_factory.mktemp("adapters"))


@pytest.fixture(autouse=True)
def no_faults(request):
    yield
    if "urls" in request.fixturenames:
        for url in request.getfixturevalue("urls"):
            _control(url, "/_test/fault", {"status": None, "count": 0, "hide_adapters": False})


def _completions(url):
    return [e["model"] for e in _control(url, "/_test/log") if e["path"] == "/v1/completions"]


def test_generations_have_the_count_and_the_servers_tokens(pair, urls):
    a, b = pair
    assert isinstance(b, ServerPolicy) and a.pool is b.pool and a.served != b.served
    assert "--max-lora-rank 8 " in b.pool.launch  # rank 4 rounded up: vLLM refuses a max rank of 4
    before = [len(_completions(u)) for u in urls]
    gens = b.generate(PROMPTS, n=2, params=PARAMS, seed=0)
    assert [len(row) for row in gens] == [2, 2, 2]
    for p, row in zip(PROMPTS, gens):
        for g in row:
            assert g.prompt == p and g.prompt_ids == b.hf.encode_prompt(p)
            assert g.completion_ids and len(g.logprobs) == len(g.completion_ids)
            assert g.text == b.hf.decode(g.completion_ids)
            assert g.finished == (g.completion_ids[-1] in b.hf.eos)
    # round-robin: three requests over two servers, each under B's served adapter
    got = [_completions(u)[n:] for u, n in zip(urls, before)]
    assert sorted(len(x) for x in got) == [1, 2] and {m for x in got for m in x} == {b.served}
    # the servers' log-probs are the in-process recompute's under B's adapter, not A's
    assert logprob_gap(b, gens)["max"] < 1e-4
    assert logprob_gap(a, gens)["max"] > 1e-3


def test_per_request_seeds_reproduce(pair):
    _, b = pair
    ids = lambda gens: [g.completion_ids for row in gens for g in row]  # noqa: E731
    first = b.generate(PROMPTS, n=2, params=PARAMS, seed=7)
    assert ids(first) == ids(b.generate(PROMPTS, n=2, params=PARAMS, seed=7))  # whichever server each lands on
    assert ids(first) != ids(b.generate(PROMPTS, n=2, params=PARAMS, seed=8))
    greedy = SamplingParams(greedy=True, max_new_tokens=12)
    assert completion_request("m", [1, 2], 1, greedy, None)["temperature"] == 0.0
    assert "seed" not in completion_request("m", [1, 2], 1, greedy, None)


def test_an_update_reaches_every_server_under_a_new_name(pair, urls):
    _, b = pair
    gens = b.generate(PROMPTS, n=2, params=PARAMS, seed=1)
    old, old_path = b.served, b._path
    assert b.sync() == old  # nothing changed: nothing sent
    flat = [g for row in gens for g in row]
    opt = torch.optim.SGD(b.parameters(), lr=2.0)
    (-b.token_logprobs([g.prompt_ids for g in flat], [g.completion_ids for g in flat])[0].sum()).backward()
    opt.step()
    opt.zero_grad()
    assert logprob_gap(b, gens)["max"] > 1e-3  # the step moved B's own log-probs
    fresh = b.generate(PROMPTS, n=2, params=PARAMS, seed=1)  # generate syncs first
    assert b.served != old and b.served.endswith(f"-v{b.version}") and b.version >= 2
    assert logprob_gap(b, fresh)["max"] < 1e-4  # the servers sample from the updated adapter
    for url in urls:
        log = _control(url, "/_test/log")
        assert {"path": "/v1/load_lora_adapter", "model": b.served} in log
        assert {"path": "/v1/unload_lora_adapter", "model": old} in log
        names = [m["id"] for m in _control(url, "/v1/models")["data"]]
        assert b.served in names and old not in names
    assert not old_path.exists() and b._path.exists()


def test_a_failed_request_is_retried_on_the_other_server_and_counted(pair, urls, caplog):
    _, b = pair
    pool = b.pool
    start = pool.failures
    _control(urls[0], "/_test/fault", {"status": 500, "count": 1})
    _control(urls[1], "/_test/fault", {"status": "drop", "count": 1})
    with caplog.at_level(logging.WARNING, logger="agon.policy"):
        gens = b.generate(PROMPTS, n=2, params=PARAMS, seed=2)
    assert [len(row) for row in gens] == [2, 2, 2]
    assert pool.failures == start + 2 and pool.failures_by_server[urls[0]] >= 1 and pool.failures_by_server[urls[1]] >= 1
    assert f"request failed on {urls[0]}" in caplog.text and f"request failed on {urls[1]}" in caplog.text
    assert logprob_gap(b, gens)["max"] < 1e-4


def test_a_reply_that_is_not_json_is_retried_elsewhere_and_named(pair, urls, caplog):
    _, b = pair
    start = b.pool.failures
    _control(urls[0], "/_test/fault", {"status": "html", "count": 3})
    with caplog.at_level(logging.WARNING, logger="agon.policy"):
        gens = b.generate(PROMPTS, n=2, params=PARAMS, seed=2)
    assert [len(row) for row in gens] == [2, 2, 2] and b.pool.failures > start
    assert f"request failed on {urls[0]} (reply is not JSON: '<html>502 Bad Gateway</html>')" in caplog.text
    _control(urls[0], "/_test/fault", {"status": None, "count": 0})


def test_every_server_down_is_an_error_naming_them(pair, urls):
    _, b = pair
    for url in urls:
        _control(url, "/_test/fault", {"status": 503, "count": 100})
    with pytest.raises(ServerError, match="every vLLM server failed") as e:
        b.generate(PROMPTS[:1], n=2, params=PARAMS, seed=0)
    assert all(url in str(e.value) for url in urls)


def test_a_refused_request_is_not_retried(pair):
    _, b = pair
    start = b.pool.failures
    with pytest.raises(ServerError, match="refused a completion request for 'no-such-adapter'.*does not exist"):
        b.pool.complete([completion_request("no-such-adapter", [1, 2, 3], 1, PARAMS, 0)])
    assert b.pool.failures == start


def test_an_unreachable_server_fails_at_start_naming_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(ServerError, match=f"(?s)vLLM server {url} is unreachable.*VLLM_ALLOW_RUNTIME_LORA_UPDATING=True "
                                          "vllm serve BASE --enable-lora --max-loras 2 --max-lora-rank"):
        ServerPool([url + "/v1/"])


def test_an_adapter_dir_the_servers_cannot_see_fails_with_the_fix(pair, urls, tmp_path):
    _, b = pair
    _control(urls[1], "/_test/fault", {"hide_adapters": True})
    other = ServerPolicy(b.hf, b.pool, tmp_path / "local-only")
    with pytest.raises(ServerError, match=f"(?s){urls[1]} cannot read the adapter at .*local-only.*must be on a "
                                          "filesystem shared with the servers"):
        other.sync()


def test_a_failed_adapter_send_is_retried_under_a_new_name(pair, urls, tmp_path):
    """A send that one server refused left the name loaded on the other: the retry must not reuse it."""
    _, b = pair
    pol = ServerPolicy(b.hf, b.pool, tmp_path / "adapters")
    _control(urls[1], "/_test/fault", {"hide_adapters": True})
    with pytest.raises(ServerError, match="cannot read the adapter"):
        pol.sync()
    _control(urls[1], "/_test/fault", {"hide_adapters": False})
    name = pol.sync()  # was: HTTP 400 "already been loaded" from the first server, for ever
    assert all(name in [m["id"] for m in _control(u, "/v1/models")["data"]] for u in urls)
    assert pol.generate(PROMPTS[:1], n=1, params=PARAMS, seed=0)[0][0].completion_ids
    assert pol.generate([], n=2, params=PARAMS, seed=0) == []  # as the HF backend; the thread pool refused none


def test_an_eos_drawn_as_the_last_allowed_token_is_finished():
    """vLLM checks the length cap before EOS, so such a completion says finish_reason "length"."""
    from baselines.policy.server_backend import to_generations

    choice = {"index": 0, "token_ids": [7, 1], "finish_reason": "length", "logprobs": {"token_logprobs": [-0.1, -0.2]}}
    (g,) = to_generations("p", [3], {"choices": [choice]}, 1, str, "", stop_token_ids=[1])
    assert g.finished and g.completion_ids == [7, 1]
    choice["token_ids"] = [7, 8]
    assert not to_generations("p", [3], {"choices": [choice]}, 1, str, "", stop_token_ids=[1])[0].finished


def test_only_lora_policies_on_one_base_are_served(urls):
    from baselines.policy import load_pair

    with pytest.raises(ValueError, match="LoRA adapters on one shared base"):
        load_pair("tiny", device="cpu", backend="server", servers=urls)


def test_truncated_is_weights_follow_trl():
    train = torch.tensor([[-1.0, -2.0, -0.5], [-0.1, -3.0, 0.0]])
    sampler = torch.tensor([[-1.5, -0.5, -0.5], [-3.0, -3.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    w = truncated_is_weights(train.requires_grad_(), sampler, mask, cap=3.0)
    want = torch.exp((train.detach() - sampler) * mask).clamp(max=3.0)  # TRL's token_truncate
    assert torch.equal(w, want) and not w.requires_grad
    assert w[1, 0] == 3.0 and w[1, 2] == 1.0 and abs(w[0, 0] - 1.6487) < 1e-4
    # in the loss: a token weight of ones changes nothing; None is the plain loss
    adv, old = torch.tensor([1.0, -1.0]), train.detach() - 0.1
    plain, _ = policy_loss(train, old, adv, mask)
    ones, _ = policy_loss(train, old, adv, mask, token_weight=torch.ones_like(train))
    doubled, _ = policy_loss(train, old, adv, mask, token_weight=torch.full_like(train, 2.0))
    assert torch.equal(plain, ones) and torch.allclose(doubled, 2 * plain)


def test_learner_options_check_the_server_backend():
    from baselines.config import InferenceArgs, LearnerArgs

    with pytest.raises(SystemExit, match="needs --servers URL"):
        LearnerArgs(model="tiny", backend="server").validate("group-size", 4)
    with pytest.raises(SystemExit, match="not an http"):
        LearnerArgs(model="smollm2", backend="server", servers="gpu1:8000").validate("group-size", 4)
    with pytest.raises(SystemExit, match="full models"):
        LearnerArgs(model="tiny", backend="server", servers="http://x:1").validate("group-size", 4)
    with pytest.raises(SystemExit, match="are for --backend server"):
        LearnerArgs(model="tiny", servers="http://x:1").validate("group-size", 4)
    with pytest.raises(SystemExit, match="--is-cap must be positive"):
        LearnerArgs(model="tiny", is_cap=-1.0).validate("group-size", 4)
    with pytest.raises(SystemExit, match="for the learners"):
        InferenceArgs(model="tiny", backend="server").check()
    args = LearnerArgs(model="smollm2", backend="server", servers="http://a:1/, http://b:2")
    args.validate("group-size", 4)
    assert args.server_urls() == ["http://a:1/", "http://b:2"]


def test_agon_grpo_trains_through_the_servers(urls, tmp_path):
    """The learner's wiring: `--backend server --servers ... --adapter-dir ...` on a LoRA pair over tiny:a's weights."""
    from baselines import agon_grpo
    from baselines.config import EvalConfig

    tiny_dir = str(ROOT / "baselines" / "policy" / "tiny_pair" / "a")  # the weights the stand-in servers hold
    args = agon_grpo.Args(model=tiny_dir, lora_rank=4, backend="server", servers=",".join(urls),
                          adapter_dir=str(tmp_path / "adapters"), steps=2, problems_per_step=1, group_size=2,
                          sampling=SamplingParams(max_new_tokens=8), eval=EvalConfig(problems=2, samples=1, max_new_tokens=8),
                          eval_every=0, checkpoint_every=0, progress=False, threads=1, is_cap=3.0,
                          out_dir=str(tmp_path), run_name="run")
    agon_grpo.main(args)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "loss/drafter" in r] == [0, 1]
    served = {m for url in urls for m in _completions(url)}
    for who in "AB":  # both adapters sampled on the servers, after each one's update too
        assert any(m.startswith(f"{who}-") and m.endswith("-v1") for m in served)
        assert any(m.startswith(f"{who}-") and not m.endswith("-v1") for m in served)
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "adapters").iterdir()) == ["A", "B"]  # old versions deleted


def _torchrun_worker(rank, world, port, urls, out):
    from baselines import agon_grpo, evaluate
    from baselines.config import EvalConfig

    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), HF_HUB_OFFLINE="1")  # what torchrun sets
    evaluate.CHUNK = 1  # evaluation sharded over the ranks too
    agon_grpo.main(agon_grpo.Args(
        model=str(ROOT / "baselines" / "policy" / "tiny_pair" / "a"), lora_rank=4, backend="server", servers=",".join(urls),
        adapter_dir=str(Path(out) / "adapters"), steps=3, problems_per_step=2, group_size=2, train_tiers="medium",
        sampling=SamplingParams(max_new_tokens=16), eval=EvalConfig(problems=2, samples=1, max_new_tokens=8),
        eval_every=0, checkpoint_every=0, progress=False, threads=1, out_dir=out, run_name="run"))
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_torchrun_ranks_sample_on_the_servers_and_rank_0_alone_sends_adapters(urls, tmp_path):
    """2 processes × 1 problem per step through the servers train as 1 process × 2 does, and each adapter
    version reaches each server once (a second load of a name is refused, so it would fail the run)."""
    import torch.multiprocessing as mp

    from ..test_distributed import free_port

    runs, loads = {}, {}
    for world in (1, 2):
        before = {u: len(_control(u, "/_test/log")) for u in urls}
        mp.spawn(_torchrun_worker, args=(world, free_port(), urls, str(tmp_path / f"w{world}")), nprocs=world)
        asked = [e for u in urls for e in _control(u, "/_test/log")[before[u]:]]
        loads[world] = sorted(re.sub(r"-[0-9a-f]{6}-", "-", e["model"]) for e in asked  # without the run tag
                              if e["path"] == "/v1/load_lora_adapter")
        runs[world] = [json.loads(x) for x in (tmp_path / f"w{world}" / "run" / "metrics.jsonl").read_text().splitlines()]
        assert sorted(p.name.split("-")[0] for p in (tmp_path / f"w{world}" / "adapters").iterdir()) == ["A", "B"]
    assert loads[1] == loads[2] and len(loads[2]) == 2 * len(urls) * 4  # both adapters: at start and after 3 steps
    update = ("loss", "grad_norm", "clip_frac", "kl", "sampler_gap")
    assert [r["step"] for r in runs[1]] == [r["step"] for r in runs[2]]
    for x, y in zip(runs[1], runs[2]):
        same = [k for k in x if k.split("/")[0] not in update and k not in ("step_time", "comm_time")]
        assert {k: x[k] for k in same} == {k: y[k] for k in same}, x["step"]
        assert {k: x[k] for k in x if k.split("/")[0] in update} == pytest.approx(
            {k: y[k] for k in y if k.split("/")[0] in update}, rel=1e-5, abs=1e-6)



def _reporting_worker(rank, world, port, urls, out):
    try:
        _torchrun_worker(rank, world, port, urls, out)
    except Exception as e:  # what each rank stopped with, for the test to read
        Path(out, f"rank{rank}.err").write_text(f"{type(e).__name__}: {e}")
    finally:  # a process group left up at exit can abort the process (gloo's thread torn down mid-shutdown)
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_under_torchrun_a_failed_adapter_send_stops_every_rank(urls, tmp_path):
    """Rank 0 alone sends adapters; when the servers cannot read them, every rank stops on its own (rank 1
    with rank 0's reason) instead of waiting for ever."""
    import torch.multiprocessing as mp

    from ..test_distributed import free_port

    for url in urls:
        _control(url, "/_test/fault", {"status": None, "count": 0, "hide_adapters": True})
    ctx = mp.spawn(_reporting_worker, args=(2, free_port(), urls, str(tmp_path)), nprocs=2, join=False)
    for _ in range(60):  # at most 2 minutes: a rank left waiting would hang here
        if ctx.join(timeout=2):
            break
    else:
        for p in ctx.processes:
            p.kill()
        pytest.fail("a rank is still waiting after rank 0 failed to send its adapter")
    errors = [(tmp_path / f"rank{r}.err").read_text() for r in (0, 1)]
    assert all("ServerError" in e and "cannot read the adapter" in e for e in errors), errors
    assert "rank 0 could not send adapter" in errors[1]
