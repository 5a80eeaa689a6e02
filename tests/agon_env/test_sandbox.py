"""The sandbox against hostile programs: each is graded as a failure, leaves nothing
behind, and the sandbox keeps working. Namespace isolation runs where this host allows
it (Linux, root); the process tier runs everywhere."""

import os
import signal
import socket
import tempfile
import threading
import time
import uuid

import psutil
import pytest

from agon_env.sandbox import Sandbox, SandboxConfig, check_tests, namespaces_available

TOKEN = uuid.uuid4().hex[:12]  # names every file a hostile program might leave
ADD = [{"input": "1 2\n", "output": "3\n"}]
CORRECT = "a, b = map(int, input().split())\nprint(a + b)"
ISOLATIONS = ["process"] + (["namespace"] if namespaces_available() else [])


def _stray_sandbox_processes():
    """Processes of this test run's sandboxes (markers start with our pid; other test
    runs on the same machine have their own)."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("AGON_SANDBOX", "").startswith(f"{os.getpid()}-"):
                found.append(p)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind():
    """After the whole module: no sandbox process alive, no escape file, no temp dir."""
    before = set(os.listdir(tempfile.gettempdir()))
    yield
    time.sleep(0.6)  # past the daemon's delayed write
    assert _stray_sandbox_processes() == []
    new = set(os.listdir(tempfile.gettempdir())) - before
    assert [n for n in new if TOKEN in n or n.startswith("agon-sandbox-")] == []
    for d in ("/var/tmp", "/dev/shm", os.getcwd()):
        assert not [n for n in os.listdir(d) if TOKEN in n], d


@pytest.fixture(scope="module", params=ISOLATIONS)
def sandbox(request):
    sb = Sandbox(SandboxConfig(isolation=request.param, timeout=1.0, memory_mb=512,
                               output_limit=1 << 20, workers=4))
    yield sb
    sb.close()


def run(sb, code, tests=ADD):
    r = sb.run(code, tests)
    assert sb.run(CORRECT, ADD).verdict == "passed", "the sandbox stopped working"
    return r


# ---------------------------------------------------------------- ordinary programs
def test_correct_passes_and_wrong_fails(sandbox):
    assert run(sandbox, CORRECT).verdict == "passed"
    r = run(sandbox, "print(4)", ADD + [{"input": "2 2\n", "output": "4\n"}])
    assert (r.verdict, r.pass_fraction) == ("wrong_answer", 0.5)


def test_call_based(sandbox):
    tests = [{"fn_name": "add", "args": [1, 2], "expected": 3}, {"fn_name": "add", "args": [2, 2], "expected": [4]}]
    assert run(sandbox, "def add(a, b):\n    print('debug')\n    return a + b", tests).verdict == "passed"
    assert run(sandbox, "class Solution:\n    def add(self, a, b): return a + b", tests).verdict == "passed"
    r = run(sandbox, "def plus(a, b): return a + b", tests)
    assert r.verdict == "runtime_error" and "no function 'add'" in r.tests[0]["stderr"]


def test_call_based_keeps_booleans_apart_from_numbers(sandbox):
    """JSON's true is not 1, though Python's True == 1."""
    def verdict(value, expected):
        return run(sandbox, f"def f(): return {value}", [{"fn_name": "f", "args": [], "expected": expected}]).verdict

    assert [verdict("True", 1), verdict("1", True), verdict("[0, True]", [0, 1]), verdict("{'a': False}", {"a": 0}),
            verdict("True", [1])] == ["wrong_answer"] * 5
    assert [verdict("True", True), verdict("[1, 2.0]", [1.0, 2]), verdict("False", [False]),
            verdict("{'a': [True]}", {"a": [True]})] == ["passed"] * 4


def test_stderr_never_changes_a_passing_verdict(sandbox):
    code = "import sys\nsys.stderr.write('MemoryError File too large')\n" + CORRECT
    assert run(sandbox, code).verdict == "passed"


def test_float_tolerance_only_for_float_answers(sandbox):
    assert run(sandbox, "print(0.3333333)", [{"input": "", "output": "0.333333333\n"}]).verdict == "passed"
    assert run(sandbox, "print(3.0000001)", [{"input": "", "output": "3\n"}]).verdict == "wrong_answer"


def test_file_names_the_solution_in_its_private_working_directory(sandbox):
    code = ("import os, sys\nhere = os.path.dirname(__file__)\n"
            "open(os.path.join(here, 'data.txt'), 'w').write('ok')\n"
            "print(open(os.path.join(here, 'data.txt')).read(), os.path.basename(__file__), here == os.getcwd(),\n"
            f"      sys.argv[0] == __file__, {os.path.dirname(os.path.abspath(__file__))!r} not in __file__)")
    assert run(sandbox, code, [{"input": "", "output": "ok solution.py True True True"}]).verdict == "passed"
    call = "import os\ndef f():\n    return os.path.basename(__file__)"
    assert run(sandbox, call, [{"fn_name": "f", "args": [], "expected": "solution.py"}]).verdict == "passed"


def test_timed_out_tests_report_their_real_exit_status(sandbox):
    r = run(sandbox, "import time\ntime.sleep(5)")
    assert (r.verdict, r.tests[0]["returncode"]) == ("timeout", -signal.SIGKILL)  # killed at the wall limit
    r = run(sandbox, "while True: pass")
    assert r.verdict == "timeout" and r.tests[0]["returncode"] in (-signal.SIGKILL, -signal.SIGXCPU)


def test_correct_but_too_slow_times_out(sandbox):
    slow = "import time\nt = time.time()\nwhile time.time() - t < 3: pass\n" + CORRECT
    t0 = time.monotonic()
    assert run(sandbox, slow).verdict == "timeout"
    assert time.monotonic() - t0 < 2.5


# ---------------------------------------------------------------- hostile programs
def test_infinite_loop(sandbox):
    assert run(sandbox, "while True: pass").verdict == "timeout"


def test_fork_bomb_is_bounded(sandbox):
    # Bounded here too: 6 doublings would be 64 processes, each printing one line.
    bomb = "import os, time\nfor _ in range(6):\n    os.fork()\nprint('x')\ntime.sleep(0.2)"
    r = run(sandbox, bomb, [{"input": "", "output": "x\n" * 64}])
    assert r.verdict in ("runtime_error", "wrong_answer"), r


def test_allocating_8_gb(sandbox):
    assert run(sandbox, "x = bytearray(8 * 2**30)\nprint(len(x))").verdict == "memory"


def test_writing_outside_the_working_directory(sandbox):
    targets = [f"/tmp/{TOKEN}_w", f"../{TOKEN}_w", f"/var/tmp/{TOKEN}_w", f"/dev/shm/{TOKEN}_w",
               os.path.join(os.getcwd(), f"{TOKEN}_w")]
    code = f"for t in {targets!r}:\n    try:\n        open(t, 'w').write('x')\n    except OSError:\n        pass\nprint('done')"
    assert run(sandbox, code).verdict == "wrong_answer"
    for t in targets[:1] + targets[2:]:
        assert not os.path.exists(t), t


def test_deleting_a_file_in_the_parent_directory(sandbox, tmp_path):
    victim = tmp_path / f"{TOKEN}_victim"
    victim.write_text("keep me")
    code = (f"import os, shutil\nfor p in ['../{victim.name}', {str(victim)!r}, {str(tmp_path)!r}, '..']:\n"
            "    try:\n        os.remove(p) if 'victim' in p else shutil.rmtree(p)\n    except OSError:\n        pass\n")
    assert run(sandbox, code).verdict == "wrong_answer"
    assert victim.read_text() == "keep me"


def test_parent_environment_is_not_visible(sandbox, monkeypatch):
    secret = f"s3cret-{TOKEN}"
    monkeypatch.setenv("AGON_TEST_SECRET", secret)
    fresh = Sandbox(SandboxConfig(isolation=sandbox.isolation, workers=1))  # its supervisor starts now
    r = run(fresh, "import os\nprint(os.environ.get('AGON_TEST_SECRET', 'none'))", [{"input": "", "output": secret}])
    assert r.verdict == "wrong_answer"
    keys = "import os\nprint(*sorted(os.environ))"  # nothing but what the sandbox sets
    assert run(fresh, keys, [{"input": "", "output": "AGON_SANDBOX HOME LANG PATH TMPDIR"}]).verdict == "passed"
    fresh.close()


def test_no_network_to_a_local_listener(sandbox):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(0.1)
    port, token = srv.getsockname()[1], f"net-{TOKEN}"
    accepted = []

    def serve():
        try:
            conn, _ = srv.accept()
            accepted.append(1)
            conn.sendall(token.encode())
            conn.close()
        except OSError:
            pass

    t = threading.Thread(target=serve)
    t.start()
    code = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\nprint(s.recv(100).decode())"
    r = run(sandbox, code, [{"input": "", "output": token}])
    t.join()
    srv.close()
    assert r.verdict == "runtime_error" and not accepted


def test_killing_its_parent(sandbox):
    code = (f"import os, signal\nfor pid in (os.getppid(), {os.getpid()}, -1):\n"
            "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\nprint(3)")
    r = run(sandbox, code)
    assert r.verdict in ("passed", "runtime_error")  # survived or refused; either way the grader lives
    assert sandbox.run(CORRECT, ADD).verdict == "passed"


def test_200_mb_of_output(sandbox):
    code = "import sys\nfor _ in range(200):\n    sys.stdout.write('x' * 2**20)"
    assert run(sandbox, code).verdict == "output_limit"


def test_double_forked_daemon_is_killed(sandbox):
    marker = f"/tmp/{TOKEN}_daemon"
    code = (f"import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            f"        time.sleep(0.4)\n        try:\n            open({marker!r}, 'w').write('escaped')\n"
            "        except OSError:\n            pass\n        time.sleep(60)\n"
            "    os._exit(0)\nos.wait()\nprint(3)")
    t0 = time.monotonic()
    r = sandbox.run(code, ADD)
    assert time.monotonic() - t0 < 5  # the daemon was killed, not waited for
    assert _stray_sandbox_processes() == []
    # namespace: the daemon starts and dies with the test; process tier: fork is refused
    assert r.verdict == ("passed" if sandbox.isolation == "namespace" else "runtime_error")
    time.sleep(0.6)
    assert not os.path.exists(marker)
    assert _stray_sandbox_processes() == []


def test_sys_exit_before_printing(sandbox):
    assert run(sandbox, "import sys\nsys.exit(0)\n" + CORRECT).verdict == "wrong_answer"


def test_segfault_through_ctypes(sandbox):
    assert run(sandbox, "import ctypes\nctypes.string_at(0)").verdict == "runtime_error"


# ---------------------------------------------------------------- namespace-only guarantees
needs_ns = pytest.mark.skipif(not namespaces_available(), reason="namespaces need Linux, root and unshare")


@needs_ns
def test_namespace_hides_the_repository_and_makes_mounts_read_only():
    sb = Sandbox(SandboxConfig(isolation="namespace", timeout=1.0))
    here = os.path.abspath(__file__)
    code = (f"import os\nprint(os.path.exists({here!r}), os.getuid() >= 61000,\n"
            "      len([d for d in os.listdir('/proc') if d.isdigit()]) <= 3)")  # only this namespace's
    r = sb.run(code, [{"input": "", "output": "False True True"}])
    assert r.verdict == "passed", r
    assert r.writable_mounts == ()
    sb.close()


@needs_ns
def test_tests_in_a_run_do_not_share_files():
    sb = Sandbox(SandboxConfig(isolation="namespace", timeout=1.0, workers=1))
    code = "import os\nprint(os.path.exists('seen'))\nopen('seen', 'w')"
    r = sb.run(code, [{"input": "", "output": "False"}] * 2)
    assert r.verdict == "passed", r
    sb.close()


# ---------------------------------------------------------------- parallel and robust
def test_batch_runs_in_parallel_and_isolates_failures():
    # A 2 s limit leaves a nap 1.4 s of start-up on a stalled CI machine; the loop runs beside the naps:
    # about 2 s in parallel, over 4.4 s one after another.
    sb = Sandbox(SandboxConfig(timeout=2.0, workers=4))
    nap = "import time\ntime.sleep(0.6)\n" + CORRECT
    jobs = [("while True: pass", ADD)] + [(nap, ADD)] * 4 + [("import ctypes\nctypes.string_at(0)", ADD)]
    t0 = time.monotonic()
    results = sb.run_batch(jobs)
    assert time.monotonic() - t0 < 0.6 * 4 + 1.0  # the four naps overlap
    assert [r.verdict for r in results] == ["timeout"] + ["passed"] * 4 + ["runtime_error"]
    sb.close()


def test_a_forked_copy_starts_its_own_supervisor():
    sb = Sandbox(SandboxConfig(workers=1))
    assert sb.run(CORRECT, ADD).verdict == "passed"
    pid = os.fork()
    if pid == 0:  # child: must not talk to (or stop) the parent's warm supervisor
        ok = sb.run(CORRECT, ADD).verdict == "passed"
        sb.close()
        os._exit(0 if ok else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert sb.run(CORRECT, ADD).verdict == "passed"
    sb.close()


def test_stop_on_failure_and_budget():
    sb = Sandbox(SandboxConfig(timeout=0.5, stop_on_failure=True))
    r = sb.run("print(0)", ADD * 5)
    assert (r.verdict, len(r.tests), r.pass_fraction) == ("wrong_answer", 1, 0.0)
    sb = Sandbox(SandboxConfig(timeout=0.3, total_timeout=0.5))
    r = sb.run("while True: pass", ADD * 4)
    assert [t["verdict"] for t in r.tests] == ["timeout"] * 4 and "budget" in r.tests[-1]["stderr"]


@pytest.mark.parametrize("tests, msg", [
    ([], "at least one test"),
    ([{"input": "1"}], "stdin test 0 needs input: str and output: str"),
    ([{"fn_name": "f", "args": 1, "expected": 2}], "call-based test 0 needs"),
])
def test_malformed_tests_are_named(tests, msg):
    with pytest.raises(ValueError, match=msg):
        check_tests(tests)


def test_bad_config_is_named():
    with pytest.raises(ValueError, match="isolation must be one of"):
        SandboxConfig(isolation="docker")
