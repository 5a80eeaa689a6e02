"""Data parallel under torchrun (gloo on CPU): 2 processes × 2 problems per step train as 1 × 4 does, a
run resumes on another world size, a launch that cannot work fails before any work, and the SLURM recipe
runs on two nodes (two torchrun agents) as on one."""

import json
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from baselines import agon_grpo, evaluate, grpo, training
from baselines.config import EvalConfig
from baselines.policy import SamplingParams

# Medium problems: mixed groups and varied lengths on both ranks, so most gradients are sums of two parts
# (and dynamic sampling leaves a rank with nothing to update at times).
TINY = dict(train_tiers="medium", sampling=SamplingParams(max_new_tokens=48), threads=1, progress=False,
            eval=EvalConfig(problems=8, samples=1, max_new_tokens=32), eval_every=2, checkpoint_every=2,
            problems_per_step=4, steps=4)
LEARNERS = {  # GRPO with dynamic sampling and the token-mean loss: refills and a global token count to agree on
    "grpo": lambda out: grpo.main(grpo.Args(**TINY, rollouts_per_problem=4, dynamic_sampling=True, refill_rounds=1,
                                            loss_type="dapo", out_dir=out, run_name="grpo")),
    "agon": lambda out: agon_grpo.main(agon_grpo.Args(**TINY, group_size=4, out_dir=out, run_name="agon")),
}
# Gradients summed over ranks differ from one batch's in the last bits: the update's numbers agree to rel 1e-5
# (grad norms were seen 2e-6 apart; losses are sums of ± terms near 0, seen 1e-7 apart), weights to ATOL.
UPDATE_KEYS = ("loss", "grad_norm", "clip_frac", "kl", "sampler_gap")
# Weights after 4 AdamW steps at lr 1e-4: a rank samples its problems in one batch, so the sampler's log-probs
# (the ratio's old side) differ in the last bits between world sizes, and Adam's normalised step turns that into
# up to 3.6e-6 (seen; 1.3e-7 when each problem was sampled alone) — under 4% of one step's size.
ATOL = 1e-5


class Cut(Exception):
    """Stands in for a kill right after the step-2 checkpoint."""


def _worker(rank, world, port, out):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), HF_HUB_OFFLINE="1")  # what torchrun sets
    evaluate.CHUNK = 4  # two chunks of the 8 held-out problems, so evaluation is sharded too
    for name, run in LEARNERS.items():
        run(out)
    if world == 1:  # a run cut short after its step-2 checkpoint...
        save = training.save_checkpoint

        def save_then_die(*a, **kw):
            save(*a, **kw)
            raise Cut

        training.save_checkpoint = save_then_die
        with pytest.raises(Cut):
            agon_grpo.main(agon_grpo.Args(**TINY, group_size=4, out_dir=out, run_name="resumed"))
    else:  # ...resumes on two processes
        agon_grpo.main(agon_grpo.Args(resume=str(Path(out).parent / "w1" / "resumed")))
    torch.distributed.destroy_process_group()


def free_port() -> int:
    """A port nothing listens on now, for a process group's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(world, out):
    mp.spawn(_worker, args=(world, free_port(), str(out)), nprocs=world)


def _rows(run_dir):
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in ("step_time", "comm_time")} for r in rows]


def _weights(run_dir):
    return torch.load(run_dir / "checkpoint" / "state.pt", weights_only=False)["params"]


def _same_run(a, b):
    ra, rb = _rows(a), _rows(b)
    assert [r["step"] for r in ra] == [r["step"] for r in rb] and len(ra) == 6  # before, 4 steps (one with the mid-run eval), after
    for x, y in zip(ra, rb):
        assert x.keys() == y.keys()
        upd = [k for k in x if k.split("/")[0] in UPDATE_KEYS]
        assert {k: x[k] for k in x if k not in upd} == {k: y[k] for k in y if k not in upd}, x["step"]
        assert {k: x[k] for k in upd} == pytest.approx({k: y[k] for k in upd}, rel=1e-5, abs=1e-6), x["step"]
    wa, wb = _weights(a), _weights(b)
    for k in wa:
        assert max(float((p - q).abs().max()) for p, q in zip(wa[k], wb[k])) <= ATOL, k


@pytest.mark.slow
def test_two_processes_train_as_one_and_resume_across_world_sizes(tmp_path):
    _spawn(1, tmp_path / "w1")
    _spawn(2, tmp_path / "w2")
    for name in LEARNERS:
        _same_run(tmp_path / "w1" / name, tmp_path / "w2" / name)
        assert (tmp_path / "w2" / name / "summary.json").exists()
    # cut on one process after step 2, resumed on two: the same run as two processes throughout
    _same_run(tmp_path / "w1" / "resumed", tmp_path / "w2" / "agon")


@pytest.mark.parametrize("env, extra, msg", [
    ({"WORLD_SIZE": "3"}, {}, "--problems-per-step 4 does not split over WORLD_SIZE=3"),
    ({"WORLD_SIZE": "2"}, {"backend": "vllm"}, "use --backend server with vLLM servers, or hf"),
    ({"WORLD_SIZE": "2", "RANK": None}, {}, "RANK not: launch with `torchrun"),
])
def test_a_launch_that_cannot_work_fails_before_any_work(tmp_path, monkeypatch, env, extra, msg):
    monkeypatch.setenv("RANK", "0")
    for k in ("LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.setenv(k, "0")
    for k, v in env.items():
        if v is None:
            monkeypatch.delenv(k)
        else:
            monkeypatch.setenv(k, v)
    args = agon_grpo.Args(**{**TINY, **extra}, group_size=4, out_dir=str(tmp_path), run_name="run")
    with pytest.raises(SystemExit, match=msg):
        agon_grpo.main(args)
    assert not (tmp_path / "run").exists() and not torch.distributed.is_initialized()


@pytest.mark.slow
def test_accelerate_launch_trains_as_torchrun_does(tmp_path):
    """`accelerate launch --multi_gpu` hands over to torchrun's launcher: the same environment, the same run
    (here on CPU with gloo: accelerate's own multi-CPU mode needs MPI)."""
    import subprocess
    import sys

    learner = ["-m", "baselines.grpo", "--device", "cpu", "--threads", "1", "--no-progress", "--steps", "2",
               "--problems-per-step", "2", "--rollouts-per-problem", "2", "--sampling.max-new-tokens", "24",
               "--eval.problems", "4", "--eval.samples", "1", "--eval.max-new-tokens", "24", "--eval-every", "0",
               "--checkpoint-every", "0", "--run-name", "run"]
    launchers = {
        "torchrun": ["torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(free_port())],
        "accelerate": ["accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                       "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port())],
    }
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    for name, launch in launchers.items():
        r = subprocess.run([sys.executable, "-m", *launch, *learner, "--out-dir", str(tmp_path / name)], env=env,
                           cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    a, t = _rows(tmp_path / "accelerate" / "run"), _rows(tmp_path / "torchrun" / "run")
    assert [r["step"] for r in a] == [r["step"] for r in t] and any("loss" in r for r in a)
    for x, y in zip(a, t):
        assert x == pytest.approx(y, rel=1e-5, abs=1e-6), x["step"]


@pytest.mark.slow
def test_the_slurm_recipe_trains_on_two_nodes_as_on_one(tmp_path):
    """configs/slurm_multinode.sbatch as SLURM would run it on 2 nodes × 1 GPU: a stand-in srun starts one
    real torchrun agent per node, and the two meet through the recipe's c10d rendezvous (on 127.0.0.1, gloo).
    The job is the same run as 1 node × 2 processes: the same ranks do the same work, so every number and
    weight agrees exactly, and rank 0 alone writes the run."""
    import subprocess
    import sys

    from tests.baselines.test_config import _fake

    root = Path(__file__).resolve().parents[2]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(bin_dir, "scontrol", "echo 127.0.0.1; echo 127.0.0.1\n")
    _fake(bin_dir, "srun", 'shift 2  # --cpus-per-task N\nfor i in $(seq 0 $((SLURM_NNODES - 1))); do '
                           'SLURM_NODEID=$i "$@" > "$LOGS/node$i.log" 2>&1 & pids+=($!); done\n'
                           'for p in "${pids[@]}"; do wait "$p" || rc=1; done\nexit ${rc:-0}\n')
    overrides = ["--problems", "arith", "--train-tiers", "medium", "--template", "auto", "--dtype", "float32",
                 "--device", "cpu", "--threads", "1", "--sampling.max-new-tokens", "48", "--sampling.temperature", "1",
                 "--sampling.top-p", "1", "--eval.problems", "4", "--eval.samples", "1", "--eval.max-new-tokens", "32",
                 "--steps", "2", "--eval-every", "0", "--checkpoint-every", "2", "--no-progress", "--run-name", "run"]
    runs = {}
    for nodes, gpus in ((2, 1), (1, 2)):
        out, logs = tmp_path / f"{nodes}x{gpus}", tmp_path / f"logs{nodes}x{gpus}"
        logs.mkdir()
        env = {**os.environ, "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
               "SLURM_NNODES": str(nodes), "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n", "GPUS_PER_NODE": str(gpus),
               "RDZV_PORT": str(free_port()), "MODEL": "tiny", "OUT": str(out), "LOGS": str(logs), "HF_HUB_OFFLINE": "1"}
        r = subprocess.run(["bash", str(root / "configs" / "slurm_multinode.sbatch"), "/unused", *overrides], env=env,
                           cwd=root, capture_output=True, text=True, timeout=600)
        node_logs = [(logs / f"node{i}.log").read_text() for i in range(nodes)]
        assert r.returncode == 0, node_logs
        # one process names the outputs: rank 0, on whichever node joined the rendezvous first
        assert sum(f"outputs in {out / 'run'}" in x for x in node_logs) == 1, node_logs
        runs[nodes] = out / "run"
    a, b = _rows(runs[2]), _rows(runs[1])
    assert len(a) == 4  # eval before, 2 steps, eval after
    assert any(v > 0 for x in a for k, v in x.items() if k.startswith("grad_norm/"))  # so the weights moved
    assert a == b
    wa, wb = _weights(runs[2]), _weights(runs[1])
    assert all(torch.equal(p, q) for k in wa for p, q in zip(wa[k], wb[k]))
