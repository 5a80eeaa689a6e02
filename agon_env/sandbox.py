"""A sandbox for untrusted, model-written Python programs (see SANDBOX.md for guarantees).

`Sandbox.run(code, tests)` runs one program against its tests in a separate supervisor
process and returns a `RunResult`: one verdict word, a pass fraction for partial
credit, and per-test details. `Sandbox.run_batch` runs many programs in parallel, one
supervisor per core; a crash or hang in one never reaches the caller or the others.

Tests (the schema `Problem.tests` uses for code):
- stdin/stdout: `{"input": str, "output": str}`; outputs are compared token by token,
  with a 1e-6 tolerance on tokens whose expected form is a float;
- call-based: `{"fn_name": str, "args": list, "expected": any}`; the solution defines a
  top-level function `fn_name` (or a LeetCode-style `Solution` class with that method),
  and its return value, round-tripped through JSON, must equal `expected`.

Verdicts: passed, wrong_answer, timeout, memory, runtime_error, output_limit,
sandbox_error. A run's verdict is `passed` if every test passed, else the verdict of its
first failing test. Each test's `returncode` is its real exit status (-9 when killed at the
wall limit, -24 at the CPU limit; None if never started). `__file__` names the solution in
its private working directory.

Isolation: `namespace` (Linux, root): PID, mount, network, IPC and UTS namespaces, every
mount read-only, the repository and home directories hidden, a private tmpfs /tmp,
and an unprivileged uid per worker slot, from a range no other live Sandbox on the host
holds; one supervisor per slot stays warm between runs, and one that dies mid-run is
replaced and the run retried once. `process` (anywhere else): rlimits, a private
temporary directory, a new session, a Python audit hook against sockets, processes
and ctypes, and a sweep of leftovers by an environment marker. `auto` picks the first.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Sequence

from . import _sandbox_uids

ISOLATIONS = ("auto", "namespace", "process")

_PKG = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_PKG)
_SUPERVISOR = os.path.join(_PKG, "_sandbox_supervisor.py")
_UNSHARE = ["unshare", "--net", "--mount", "--pid", "--ipc", "--uts", "--fork", "--kill-child", "--mount-proc"]
_MARK = "AGON_SANDBOX"


@dataclass(frozen=True)
class SandboxConfig:
    """Limits and isolation for every program a `Sandbox` runs."""

    timeout: float = 2.0
    """Wall seconds per test; the CPU limit is this, rounded up to whole seconds."""
    memory_mb: int = 1024
    """Address-space limit per test process, MiB."""
    output_limit: int = 16 * 2**20
    """Bytes a test may write to stdout (and to any one file)."""
    max_procs: int | None = 4
    """Processes and threads the sandbox uid may hold at once (RLIMIT_NPROC); 1 = no children."""
    total_timeout: float = 60.0
    """Wall seconds for all of one program's tests; tests not started by then are timeouts."""
    stop_on_failure: bool = False
    """Stop at the first failing test (faster; the pass fraction then counts the rest as failed)."""
    isolation: str = "auto"
    """'namespace', 'process', or 'auto' (namespace where it works)."""
    workers: int | None = None
    """Programs run at once by `run_batch` (default: all cores)."""
    site_packages: bool = False
    """Let solutions import the base interpreter's site-packages (costs ~30 ms per test)."""
    hidden_paths: tuple[str, ...] = ()
    """Extra directories to hide from solutions (namespace isolation); the repository,
    the working directory and home directories are always hidden."""
    uid_base: int = 61000
    """First uid of the host-wide pool; each live Sandbox takes `workers` uids from it, one
    per slot, never shared with another live Sandbox (namespace isolation)."""
    uid_pool: int = 4000
    """Uids in the pool, uid_base .. uid_base + uid_pool - 1."""

    def __post_init__(self):
        if self.isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {ISOLATIONS}, got {self.isolation!r}")
        if self.timeout <= 0 or self.memory_mb <= 0 or self.output_limit <= 0:
            raise ValueError(f"timeout, memory_mb and output_limit must be positive, got "
                             f"{self.timeout}, {self.memory_mb}, {self.output_limit}")


@dataclass(frozen=True)
class RunResult:
    """One program's result over its tests."""

    verdict: str
    pass_fraction: float
    tests: list[dict] = field(default_factory=list)
    error: str | None = None
    writable_mounts: tuple[str, ...] = ()
    """Mounts the namespace sandbox failed to make read-only (empty on a healthy host)."""

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"


@functools.lru_cache(maxsize=None)
def namespaces_available() -> bool:
    """Whether this process can create PID, mount and network namespaces (root + unshare)."""
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(_UNSHARE + ["true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _base_python() -> str:
    """The real interpreter, not a venv shim: the venv may sit inside a hidden path."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def check_tests(tests: Sequence[dict]) -> None:
    """Raise ValueError naming the first test that fits neither schema."""
    if not tests:
        raise ValueError("a program needs at least one test")
    for i, t in enumerate(tests):
        if not isinstance(t, dict):
            raise ValueError(f"test {i} must be a dict, got {type(t).__name__}")
        if "fn_name" in t:
            if not isinstance(t["fn_name"], str) or not isinstance(t.get("args"), list) or "expected" not in t:
                raise ValueError(f"call-based test {i} needs fn_name: str, args: list and expected, got {sorted(t)}")
        elif not (isinstance(t.get("input"), str) and isinstance(t.get("output"), str)):
            raise ValueError(f"stdin test {i} needs input: str and output: str, got {sorted(t)}")


class _Slot:
    """One warm supervisor (and, in namespace isolation, its namespaces) for one worker slot.

    It is started on first use and restarted after it dies or overruns; every job still
    gets fresh test processes, a wiped working directory and a sweep.
    """

    def __init__(self, sandbox: "Sandbox", index: int):
        self.sandbox, self.index = sandbox, index
        self.proc: subprocess.Popen | None = None
        self.workdir: str | None = None
        self.writable: tuple[str, ...] = ()
        self.owner = os.getpid()

    def _settings(self) -> dict:
        c, ns = self.sandbox.config, self.sandbox.isolation == "namespace"
        work = "/tmp/w" if ns else os.path.join(self.workdir, "w")
        hidden = {_REPO, os.getcwd(), os.path.expanduser("~"), "/root", "/home", *c.hidden_paths}
        return {
            "timeout": c.timeout, "memory_mb": c.memory_mb, "output_limit": c.output_limit,
            "max_procs": c.max_procs, "total_timeout": c.total_timeout, "stop_on_failure": c.stop_on_failure,
            "site": c.site_packages, "uid": self.sandbox._uid_start() + self.index if ns else None, "guard": not ns,
            "workdir": self.workdir, "python": _base_python(), "python_prefix": sys.base_prefix,
            "hidden_paths": sorted(os.path.realpath(p) for p in hidden),
            "tmpfs_mb": 2 * c.output_limit // 2**20 + 256,  # room for large test inputs; tmpfs uses only what is written
            "env": {"PATH": "/usr/bin:/bin", "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8", _MARK: self.marker},
        }

    def _start(self) -> None:
        ns = self.sandbox.isolation == "namespace"
        self.owner = os.getpid()
        self.marker = f"{self.owner}-{uuid.uuid4().hex}"  # in every test's env; names the owning grader
        if not ns:
            self.workdir = tempfile.mkdtemp(prefix="agon-sandbox-")
        cmd = (_UNSHARE if ns else []) + [_base_python(), "-I", "-S", _SUPERVISOR]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, start_new_session=True)
        reply = self._ask(self._settings(), 30.0)
        if "error" in reply:
            self.close()
            raise RuntimeError(f"sandbox supervisor could not start: {reply['error']}")
        self.writable = tuple(reply["fs_writable"])

    def _ask(self, message: dict, timeout: float) -> dict:
        """Send one line, wait up to `timeout` s for the reply line. A dead or silent
        supervisor is reported as {'error', 'dead'}, plus 'retry' if it died (not overran)."""
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
            if not select.select([self.proc.stdout], [], [], timeout)[0]:
                return {"error": f"supervisor overran its {timeout:.0f} s budget", "dead": True}
            line = self.proc.stdout.readline()
        except OSError as e:
            return {"error": f"supervisor pipe failed: {e}", "dead": True, "retry": True}
        if not line:
            return {"error": f"supervisor exited with status {self.proc.wait()}", "dead": True, "retry": True}
        return json.loads(line)

    def run(self, code: str, tests: list[dict], timeout: float, memory_mb: int) -> RunResult:
        if self.owner != os.getpid():  # a forked copy: the warm supervisor is the parent's
            self.proc, self.workdir = None, None
        c = self.sandbox.config
        budget = c.total_timeout + len(tests) * (timeout + 1.0) + 10.0
        for _ in range(2):  # a supervisor that died (not one that overran) is replaced once
            if self.proc is None or self.proc.poll() is not None:
                self.close()
                self._start()
            reply = self._ask({"code": code, "tests": tests, "timeout": timeout, "memory_mb": memory_mb}, budget)
            if self.sandbox.isolation == "process":
                _sweep_marker(self.marker)
            if reply.get("dead"):
                self.close()
            if not reply.get("retry"):
                break
        if "error" in reply:
            return RunResult("sandbox_error", 0.0, [], reply["error"])
        return _summarise(reply["results"], len(tests), self.writable)

    def close(self) -> None:
        if self.owner != os.getpid():
            return  # never stop a parent's supervisor from a forked child
        if self.proc is not None:
            try:  # unshare --kill-child takes the whole namespace with it
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            self.proc = None
        if self.workdir is not None:
            _sweep_marker(self.marker)
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


class Sandbox:
    """Runs untrusted programs against tests; thread-safe, parallel in `run_batch`.

    Each worker slot keeps one supervisor warm between runs; `close()` (also run at
    exit) stops them and gives back the uid range. A pickled or forked copy starts its own.
    """

    def __init__(self, config: SandboxConfig = SandboxConfig()):
        self.config = config
        if config.isolation == "namespace" and not namespaces_available():
            raise RuntimeError("namespace isolation needs Linux, root and a working `unshare`; "
                               "use isolation='process' or 'auto'")
        ns = config.isolation == "namespace" or (config.isolation == "auto" and namespaces_available())
        self.isolation = "namespace" if ns else "process"
        self.workers = config.workers or os.cpu_count() or 1
        self._slots: queue.Queue[_Slot] = queue.Queue()
        self._all = [_Slot(self, i) for i in range(self.workers)]
        for slot in self._all:
            self._slots.put(slot)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._uids: tuple[int, int] | None = None  # (first uid, owning pid), taken at first use
        self._uid_lock = threading.Lock()
        atexit.register(self.close)

    def _uid_start(self) -> int:
        """The first uid of this Sandbox's host-wide range (allocated once per process)."""
        with self._uid_lock:
            if self._uids is None or self._uids[1] != os.getpid():
                c = self.config
                self._uids = (_sandbox_uids.acquire(self.workers, c.uid_base, c.uid_pool), os.getpid())
            return self._uids[0]

    def run(self, code: str, tests: Sequence[dict], timeout: float | None = None,
            memory_mb: int | None = None) -> RunResult:
        """Run `code` against `tests`; `timeout` (wall seconds per test) and `memory_mb`
        override the config's for this program. Never raises for anything the program does."""
        check_tests(tests)
        if (timeout is not None and timeout <= 0) or (memory_mb is not None and memory_mb <= 0):
            raise ValueError(f"timeout and memory_mb must be positive, got {timeout} and {memory_mb}")
        slot = self._slots.get()
        try:
            return slot.run(code, list(tests), timeout or self.config.timeout, memory_mb or self.config.memory_mb)
        finally:
            self._slots.put(slot)

    def run_batch(self, jobs: Sequence[tuple]) -> list[RunResult]:
        """Run (code, tests[, timeout[, memory_mb]]) jobs in parallel, `workers` at a time,
        results in order."""
        for job in jobs:
            check_tests(job[1])
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="sandbox")
        return list(self._pool.map(lambda job: self.run(*job), jobs))

    def close(self) -> None:
        """Stop the pool and every warm supervisor (a later run restarts them)."""
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
        for slot in self._all:
            slot.close()
        with self._uid_lock:
            if self._uids is not None and self._uids[1] == os.getpid():
                _sandbox_uids.release(self._uids[0])
            self._uids = None

    def __getstate__(self):
        return {"config": self.config}

    def __setstate__(self, state):
        self.__init__(state["config"])


def _summarise(results: list[dict], n_tests: int, writable: tuple[str, ...]) -> RunResult:
    passed = sum(r["verdict"] == "passed" for r in results)
    first_bad = next((r["verdict"] for r in results if r["verdict"] != "passed"), None)
    return RunResult(first_bad or "passed", passed / n_tests, results, writable_mounts=writable)


def _sweep_marker(marker: str) -> None:
    """Process isolation: kill every process that carries this run's environment marker,
    including daemons that left the session. Needs psutil; without it, nothing is swept."""
    try:
        import psutil
    except ImportError:
        return
    for p in psutil.process_iter():
        try:
            if p.environ().get(_MARK) == marker:
                p.kill()
        except (psutil.Error, OSError):
            continue
