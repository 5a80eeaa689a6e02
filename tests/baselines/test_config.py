"""The option trees: every field of every CLI has help, nested values round-trip through config.json."""

import ast
import dataclasses
import inspect
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest

from baselines import agon_grpo, cascade, grpo, moa, sb3_ppo, single_model
from baselines.config import EvalConfig, InferenceArgs, LearnerArgs, from_dict
from baselines.policy import ModelSpec, load_pair
from baselines.policy.tiny_build import BuildConfig, PairEvalArgs
from benchmarks import replicate

from .cli import ROOT

CLIS = {"baselines.agon_grpo": agon_grpo.Args, "baselines.grpo": grpo.Args, "baselines.cascade": cascade.Args,
        "baselines.moa": moa.Args, "baselines.single_model": single_model.Args, "baselines.sb3_ppo": sb3_ppo.Args,
        "benchmarks.replicate": replicate.Args}


def documented_fields(cls) -> set[str]:
    """Fields followed by a docstring (`name: type = value` then a string) in `cls` or a base."""
    found = set()
    for klass in cls.__mro__:
        if klass is object or not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for node, nxt in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str) and nxt.value.value.strip()):
                found.add(node.target.id)
    return found


def undocumented(cls, prefix: str = "") -> list[str]:
    """Every field of the dataclass tree under `cls` without help text, as its command-line name."""
    missing, hints, docs = [], typing.get_type_hints(cls), documented_fields(cls)
    for f in dataclasses.fields(cls):
        name = prefix + f.name.replace("_", "-")
        if f.name not in docs:
            missing.append(name)
        if dataclasses.is_dataclass(hints[f.name]):
            missing += undocumented(hints[f.name], name + ".")
    return missing


@pytest.mark.parametrize("cls", [*CLIS.values(), BuildConfig, PairEvalArgs], ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_option_has_help(cls):
    assert undocumented(cls) == []


def test_the_walker_finds_a_missing_help():
    @dataclasses.dataclass
    class Bad:
        documented: int = 1
        """has help"""
        bare: int = 2
        nested: EvalConfig = dataclasses.field(default_factory=EvalConfig)
        """has help"""

    assert undocumented(Bad) == ["bare"]


@pytest.mark.parametrize("module", sorted(CLIS))
def test_help_runs_and_shows_nested_groups(module):
    out = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                         env={"COLUMNS": "200", "PATH": "", "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    if issubclass(CLIS[module], (LearnerArgs, InferenceArgs)):
        assert "--eval.top-p" in out.stdout
    if issubclass(CLIS[module], LearnerArgs):
        assert "--sampling.temperature" in out.stdout and "{grpo,dapo,dr_grpo}" in out.stdout


def test_config_round_trips_through_json_with_nested_groups():
    args = agon_grpo.Args(reward="margin", steps=3, eval=EvalConfig(top_p=0.9, samples=2))
    args.sampling.temperature = 0.6
    back = from_dict(agon_grpo.Args, dataclasses.asdict(args))
    assert back == args and isinstance(back.sampling, type(args.sampling)) and back.eval.top_p == 0.9
    assert from_dict(LearnerArgs, dataclasses.asdict(args)).sampling.temperature == 0.6  # extra keys ignored


def test_inference_uses_the_runs_eval_settings_unless_given():
    run = LearnerArgs(eval=EvalConfig(temperature=0.6, top_p=0.95, samples=8))
    assert cascade.Args().with_run_eval(run) == run.eval
    mine = cascade.Args(eval=EvalConfig(samples=2)).with_run_eval(run)
    assert (mine.samples, mine.temperature, mine.top_p) == (2, 0.6, 0.95)


@pytest.mark.parametrize("cli", [cascade.Args, moa.Args, single_model.Args])
def test_a_flag_given_at_its_default_value_still_beats_the_runs(cli):
    """`--eval.samples 4` is EvalConfig's default: on the command line it still replaces a run's 8."""
    run = LearnerArgs(eval=EvalConfig(temperature=0.6, top_p=0.95, samples=8, greedy=False, max_new_tokens=64))
    args = cli.cli(["--eval.samples", "4", "--eval.top_p=1.0", "--eval.greedy", "--eval.max-new-tokens", "32"])
    assert args.eval_given == ("greedy", "max_new_tokens", "samples", "top_p")
    got = args.with_run_eval(run)
    assert (got.samples, got.top_p, got.greedy, got.max_new_tokens, got.temperature) == (4, 1.0, True, 32, 0.6)
    assert cli.cli(["--eval.no-greedy"]).eval_given == ("greedy",)
    assert cli.cli([]).with_run_eval(run) == run.eval


@pytest.mark.parametrize("spec, parts, tiny", [("tiny", ("tiny",), True), ("tiny:b", ("tiny:b",), True),
                                               ("smollm2", ("smollm2",), False), ("org/name", ("org/name",), False)])
def test_model_spec_parses_once(spec, parts, tiny):
    s = ModelSpec.parse(spec)
    assert (s.parts, s.tiny, str(s)) == (parts, tiny, spec)
    assert s.member("b") == ("tiny:b" if spec == "tiny" else spec)


@pytest.mark.parametrize("spec, msg", [("/no/such", "'/no/such' is not"), ("a,b,c", "two as"), ("tiny,", "two as"),
                                       ("./org/name", "is not")])
def test_model_spec_names_what_is_wrong(spec, msg):
    with pytest.raises(ValueError, match=msg):
        ModelSpec.parse(spec)


@pytest.mark.parametrize("learner", ["agon_grpo", "grpo"])
def test_the_papers_gpu_config_parses_for_both_learners(learner):
    """configs/paper_qwen3_0.6b.sh runs on a GPU only; every flag it passes must still be an option of the learner."""
    import importlib
    import shlex
    from pathlib import Path

    import tyro

    script = (Path(__file__).resolve().parents[2] / "configs" / "paper_qwen3_0.6b.sh").read_text()
    call = script.split('python -m "$LEARNER"', 1)[1].replace("\\\n", " ").splitlines()[0]
    argv = [a for a in shlex.split(call.replace("$DATA", "/data")) if a != "$@"]
    args = tyro.cli(importlib.import_module(f"baselines.{learner}").Args, args=argv)
    assert args.model == "Qwen/Qwen3-0.6B" and args.micro_batch == 4 and args.sampling.max_new_tokens == 8192
    assert args.dtype == "bfloat16" and args.is_cap == 3.0  # vLLM samples at bf16: TRL's truncated IS


def _fake(bin_dir, name, body):
    (bin_dir / name).write_text("#!/usr/bin/env bash\n" + body)
    (bin_dir / name).chmod(0o755)


@pytest.mark.parametrize("servers", [None, "http://gen0:8000,http://gen1:8001"])
def test_the_slurm_recipe_launches_both_learners_options(tmp_path, servers):
    """configs/slurm_multinode.sbatch under stand-ins for srun and scontrol: what it starts is torchrun with
    options the learner accepts, on the HF backend, or on the servers when SERVERS is set."""
    import json
    import os

    import tyro

    from baselines import agon_grpo

    root = Path(__file__).resolve().parents[2]
    _fake(tmp_path, "scontrol", "echo head; echo node2\n")
    _fake(tmp_path, "srun", f"python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \"$@\" > {tmp_path}/argv\n")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "SLURM_NNODES": "2", "SLURM_JOB_ID": "7",
           "SLURM_JOB_NODELIST": "head,node2"}
    if servers:
        env.update(SERVERS=servers, ADAPTER_DIR="/shared/adapters")
    r = subprocess.run(["bash", str(root / "configs" / "slurm_multinode.sbatch"), "/data"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    argv = json.loads((tmp_path / "argv").read_text())
    argv = argv[argv.index("torchrun"):]
    assert argv[:7] == ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "--rdzv-id", "7"]
    args = tyro.cli(agon_grpo.Args, args=argv[argv.index("baselines.agon_grpo") + 1:])
    assert args.problems_per_step == 16 and args.device == "cuda" and args.model == "Qwen/Qwen3-0.6B"
    assert args.micro_batch == 4 and args.dtype == "bfloat16"
    assert (args.backend, args.servers, args.adapter_dir) == (("server", servers, "/shared/adapters") if servers
                                                              else ("hf", "", ""))
    if servers:  # a server list without an adapter dir is refused before anything starts
        del env["ADAPTER_DIR"]
        r = subprocess.run(["bash", str(root / "configs" / "slurm_multinode.sbatch"), "/data"], env=env,
                           capture_output=True, text=True)
        assert r.returncode != 0 and "ADAPTER_DIR must name a directory the servers can read" in r.stderr
        env.update(SERVERS="", ADAPTER_DIR="/shared/adapters")  # `paste` of a server list not written yet
        r = subprocess.run(["bash", str(root / "configs" / "slurm_multinode.sbatch"), "/data"], env=env,
                           capture_output=True, text=True)
        assert r.returncode != 0 and "SERVERS is set but empty" in r.stderr


def test_the_slurm_server_recipe_starts_one_lora_server_per_gpu(tmp_path):
    """configs/slurm_vllm_servers.sbatch with two tasks of a stand-in srun: two `vllm serve` calls with LoRA on,
    one per GPU and port, and their URLs in the list the training job reads."""
    import os

    root = Path(__file__).resolve().parents[2]
    _fake(tmp_path, "srun", "shift 2; for i in 0 1; do SLURM_LOCALID=$i \"$@\" & done; wait\n")  # drop --cpus-per-task N
    _fake(tmp_path, "scontrol", "echo gen0\n")
    _fake(tmp_path, "vllm", f"echo \"$CUDA_VISIBLE_DEVICES $VLLM_ALLOW_RUNTIME_LORA_UPDATING $*\" >> {tmp_path}/calls\n")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "SERVERS_FILE": str(tmp_path / "servers.txt"),
           "SLURM_JOB_NODELIST": "gen0", "SLURM_NTASKS_PER_NODE": "2"}
    r = subprocess.run(["bash", str(root / "configs" / "slurm_vllm_servers.sbatch")], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert sorted((tmp_path / "servers.txt").read_text().split()) == ["http://gen0:8000", "http://gen0:8001"]
    calls = sorted((tmp_path / "calls").read_text().splitlines())
    assert len(calls) == 2
    for gpu, call in enumerate(calls):
        assert call.startswith(f"{gpu} True serve Qwen/Qwen3-0.6B --enable-lora --max-loras 2")
        assert f"--port {8000 + gpu}" in call and "--logprobs-mode raw_logprobs" in call


@pytest.mark.parametrize("cli", [cascade.Args, moa.Args, single_model.Args])
def test_inference_reads_the_runs_problems_unless_given(cli):
    """A deepmath run is re-evaluated on deepmath: --problems defaults to 'arith', which must not win unasked."""
    run = LearnerArgs(problems="deepmath:/data/deepmath.parquet")
    assert cli.cli([]).problem_source(run) == run.problems
    assert cli.cli(["--problems", "arith"]).problem_source(run) == "arith"  # given at its default value
    assert cli.cli(["--problems=mine.jsonl"]).problem_source(run) == "mine.jsonl"
    assert cli(problems="mine.jsonl").problem_source(run) == "mine.jsonl"  # built in code: a non-default value


@pytest.mark.parametrize("cli, argv, msg", [
    (cascade.Args, ["--eval.split", "validation"], "--eval.split does not apply here: the direction is chosen"),
    (moa.Args, ["--eval.split", "test"], "--eval.split does not apply here: use --split"),
    (moa.Args, ["--eval.no-greedy"], "--eval.greedy does not apply here"),
    (single_model.Args, ["--eval.greedy"], "--eval.greedy does not apply here"),
])
def test_an_eval_flag_a_method_does_not_read_is_refused(cli, argv, msg):
    with pytest.raises(SystemExit, match=msg):
        cli.cli(argv).check()
    cli.cli(["--eval.samples", "2"]).check()  # the flags it reads pass


@pytest.mark.parametrize("tool", [cascade, moa, agon_grpo])
def test_a_pair_tool_given_one_tiny_model_says_so(tool, tmp_path):
    with pytest.raises(SystemExit, match="'tiny:a' is one of the tiny pair"):
        tool.main(tool.Args(model="tiny:a", out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="'tiny:b' is one of the tiny pair"):  # the loader itself, for the API
        load_pair("tiny:b")
