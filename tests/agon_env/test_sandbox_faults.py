"""The sandbox among other graders and under faults: uid ranges are unique per live
Sandbox on the host (so a fork bomb in one grader never fails another's programs), and a
supervisor killed mid-batch is replaced and the batch still gets the right verdicts."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from agon_env import _sandbox_uids
from agon_env.sandbox import Sandbox, SandboxConfig, _Slot, namespaces_available

REPO = Path(__file__).resolve().parents[2]
ADD = [{"input": "1 2\n", "output": "3\n"}]
CORRECT = "a, b = map(int, input().split())\nprint(a + b)"
# Correct, and needs a second thread: it fails if its uid has no RLIMIT_NPROC budget left.
THREADED = ("import threading\ndef main():\n    a, b = map(int, input().split())\n    print(a + b)\n"
            "t = threading.Thread(target=main)\nt.start()\nt.join()")
BOMB = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.001)"
ISOLATIONS = ["process"] + (["namespace"] if namespaces_available() else [])
needs_ns = pytest.mark.skipif(not namespaces_available(), reason="namespaces need Linux, root and unshare")


def _other_grader(script: str, *args: str) -> subprocess.Popen:
    """Another process with its own Sandbox: it prints 'ready <first uid>' once it holds one."""
    prog = ("import sys, time\nfrom agon_env.sandbox import Sandbox, SandboxConfig\n"
            "sb = Sandbox(SandboxConfig(isolation='namespace', timeout=1.0, workers=1))\n"
            f"assert sb.run({CORRECT!r}, {ADD!r}).verdict == 'passed'\n"
            "print('ready', sb._uid_start(), flush=True)\n" + script)
    return subprocess.Popen([sys.executable, "-c", prog, *args], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def _table() -> list[str]:
    return Path(_sandbox_uids.TABLE).read_text().splitlines()


# ---------------------------------------------------------------- uid ranges
def test_uid_table_finds_gaps_reclaims_dead_owners_and_names_the_holders(tmp_path):
    table = str(tmp_path / "uids")
    a = _sandbox_uids.acquire(4, 100, 10, table)
    b = _sandbox_uids.acquire(2, 100, 10, table)
    assert (a, b) == (100, 104)
    _sandbox_uids.release(a, table)
    assert _sandbox_uids.acquire(3, 100, 10, table) == 100  # the freed gap is reused
    with pytest.raises(RuntimeError, match=r"no 5 free sandbox uids in 100-109 \(held: 100-102 \(pid \d+\), 104-105"):
        _sandbox_uids.acquire(5, 100, 10, table)
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open(table, "a") as f:  # a range whose owner exited, and one whose pid was reused by another process
        f.write(f"106 2 {dead.pid} 12345\n108 2 {os.getpid()} 1\ngarbage line\n")
    assert _sandbox_uids.acquire(4, 100, 10, table) == 106
    assert len(Path(table).read_text().splitlines()) == 3


@needs_ns
def test_live_sandboxes_in_this_and_other_processes_get_disjoint_uids():
    a = Sandbox(SandboxConfig(isolation="namespace", workers=2))
    b = Sandbox(SandboxConfig(isolation="namespace", workers=1))
    other = _other_grader("sys.stdin.readline()")
    ua, ub = a._uid_start(), b._uid_start()
    uo = int(other.stdout.readline().split()[1])
    ranges = sorted([(ua, ua + 2), (ub, ub + 1), (uo, uo + 1)])
    assert all(hi <= lo for (_, hi), (lo, _) in zip(ranges, ranges[1:])), ranges
    for sb, uid in ((a, ua), (b, ub)):  # solutions really run as the allocated uid
        assert sb.run("import os\nprint(os.getuid())", [{"input": "", "output": str(uid)}]).verdict == "passed"
    other.kill()  # SIGKILL: it never gives its range back ...
    other.wait()
    c = Sandbox(SandboxConfig(isolation="namespace", workers=1))
    c._uid_start()  # ... so the next allocation reclaims it
    assert str(other.pid) not in [line.split()[2] for line in _table()]
    a.close()
    assert str(ua) not in [line.split()[0] for line in _table()]
    b.close()
    c.close()


@needs_ns
def test_a_fork_bomb_in_one_grader_never_fails_another():
    bomber = _other_grader(
        f"end = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n"
        f"    print(sb.run({BOMB!r}, {ADD!r}).verdict, flush=True)\n", "3")
    sb = Sandbox(SandboxConfig(isolation="namespace", timeout=2.0, workers=1))
    assert bomber.stdout.readline().startswith("ready")
    time.sleep(0.3)  # the first bomb is running and holds its uids' whole process budget
    verdicts, t0 = [], time.monotonic()
    while time.monotonic() - t0 < 2.0:
        verdicts.append(sb.run(THREADED, ADD).verdict)
    bombs = bomber.communicate(timeout=30)[0].split()
    sb.close()
    assert bombs and set(bombs) == {"timeout"}  # the bomb ran (and was held) all along
    assert len(verdicts) >= 5 and set(verdicts) == {"passed"}, verdicts


# ---------------------------------------------------------------- a killed supervisor
def _supervisor_pid(slot) -> int:
    """The supervisor itself: in namespace isolation, the child of `unshare`."""
    proc = psutil.Process(slot.proc.pid)
    return proc.children()[0].pid if slot.sandbox.isolation == "namespace" else proc.pid


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_supervisor_killed_mid_batch_is_replaced_and_the_batch_completes(isolation):
    sb = Sandbox(SandboxConfig(isolation=isolation, timeout=5.0, workers=2))
    nap = "import time\ntime.sleep(0.6)\n"
    sb.run_batch([(nap + CORRECT, ADD)] * 2)  # both supervisors warm
    slot = sb._all[0]
    killed = _supervisor_pid(slot)
    jobs = [(nap + CORRECT, ADD), (nap + "print(4)", ADD)] * 3
    killer = threading.Timer(0.3, os.kill, (killed, signal.SIGKILL))  # while both slots are mid-job
    killer.start()
    results = sb.run_batch(jobs)
    killer.join()
    assert [r.verdict for r in results] == ["passed", "wrong_answer"] * 3
    assert not psutil.pid_exists(killed) and _supervisor_pid(slot) != killed
    assert sb.run(CORRECT, ADD).verdict == "passed"
    sb.close()


def test_a_supervisor_that_dies_again_is_a_sandbox_error(monkeypatch):
    sb = Sandbox(SandboxConfig(timeout=2.0, workers=1))
    assert sb.run(CORRECT, ADD).verdict == "passed"
    ask, starts = _Slot._ask, []

    def dies_on_every_job(slot, message, timeout):
        if "code" in message:  # a job, not the start-up settings
            starts.append(slot.proc.pid)
            os.killpg(slot.proc.pid, signal.SIGKILL)
            slot.proc.wait()
        return ask(slot, message, timeout)

    monkeypatch.setattr(_Slot, "_ask", dies_on_every_job)
    r = sb.run(CORRECT, ADD)
    assert r.verdict == "sandbox_error" and re.match("supervisor (exited|pipe failed)", r.error), r
    assert len(set(starts)) == 2  # replaced once, then given up: no retry loop
    monkeypatch.undo()
    assert sb.run(CORRECT, ADD).verdict == "passed"
    sb.close()
