"""The sandbox supervisor: runs one untrusted program against its tests, then reports.

Started by `agon_env.sandbox` as `python -I -S _sandbox_supervisor.py` (stdlib only), once
per worker slot and kept warm: the first stdin line holds the sandbox settings, then each
line is a job (a program and its tests), answered by one JSON line on stdout.

In `namespace` isolation it is PID 1 of fresh PID, mount and network namespaces, as
root. It then makes every inherited mount read-only, puts an empty read-only tmpfs over
each hidden path (the repository, home directories: where test data and secrets live),
mounts a size-limited tmpfs on /tmp for the working directory, and runs each test as an
unprivileged uid. As PID 1, `kill(-1, SIGKILL)` reaches every process the test left,
however it detached, and when the supervisor exits the kernel kills the namespace.

In `process` isolation (no namespaces) it runs as the caller with the same rlimits, a
new session per test, a Python audit hook against sockets, subprocesses and ctypes, and
the caller sweeps leftovers by an environment marker (see SANDBOX.md for what holds).

Test dicts, as sent by the caller: stdin `{"input": str, "output": str}`;
call-based `{"fn_name": str, "args": list, "expected": any}`.
"""

import ctypes
import json
import math
import os
import resource
import select
import signal
import subprocess
import sys
import time

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 32, 4096, 16384
MNT_DETACH = 2
_ESSENTIAL = ("/tmp", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/dev", "/proc", "/sys")
_libc = ctypes.CDLL(None, use_errno=True)

# The child's Python: -I ignores PYTHON* variables and user site, -S skips site-packages
# (and 30 ms of start-up) unless the job asks for them. Audit hook first in process mode.
_GUARD = r"""
import os, sys
_FS = {"os.remove": (1, (1,)), "os.rmdir": (1, (1,)), "os.mkdir": (1, (2,)), "os.rename": (2, (2, 3)),
       "os.link": (2, (2, 3)), "os.symlink": (2, (2,))}  # event: (path args, dir_fd args)
def _guard(ev, args, _home=os.getcwd() + os.sep, _bad=(
        "socket.", "subprocess.", "os.fork", "os.exec", "os.posix_spawn", "os.spawn",
        "os.system", "ctypes.dlopen", "os.kill", "os.killpg", "os.chmod", "os.chown")):
    if ev.startswith(_bad):
        raise PermissionError(f"sandbox: {ev} is not allowed")
    if ev == "open" and isinstance(args[0], (str, bytes)):
        p = os.path.realpath(os.fsdecode(args[0]))
        writes = str(args[1] or "r").strip("rbt") or (args[2] or 0) & 0o3103
        # a directory opened outside could anchor dir_fd calls, which audit hooks cannot see
        if not p.startswith(_home) and p != "/dev/null" and (writes or os.path.isdir(p)):
            raise PermissionError(f"sandbox: open outside the working directory: {p}")
    elif ev in _FS:
        n, fds = _FS[ev]
        if any(args[i] is not None for i in fds if i < len(args)):
            raise PermissionError(f"sandbox: {ev} with dir_fd is not allowed")
        for p in args[:n]:
            p = os.path.realpath(os.fsdecode(p)) if isinstance(p, (str, bytes)) else ""
            if not p.startswith(_home):
                raise PermissionError(f"sandbox: {ev} outside the working directory: {p}")
sys.addaudithook(_guard)
"""
# The solution runs as if by `python /its/workdir/solution.py`: __file__ and sys.argv[0] name it.
_RUN_FILE = r"""
import os, sys
sys.argv[0] = _f = os.path.abspath("solution.py")
exec(compile(open(_f).read(), _f, "exec"), {"__name__": "__main__", "__file__": _f})
"""
# Call-based tests: the solution's own prints go to stderr; only the result reaches stdout.
_RUN_CALL = r"""
import json, os, sys
_out = os.dup(1); os.dup2(2, 1)
_spec = json.load(sys.stdin)
sys.stdin = open(os.devnull)
sys.argv[0] = _f = os.path.abspath("solution.py")
_g = {"__name__": "solution", "__file__": _f}
exec(compile(open(_f).read(), _f, "exec"), _g)
_fn = _g.get(_spec["fn_name"])
if _fn is None and "Solution" in _g:
    _fn = getattr(_g["Solution"](), _spec["fn_name"])
if _fn is None:
    raise NameError(f"solution defines no function {_spec['fn_name']!r}")
_res = json.dumps(_fn(*_spec["args"]))
os.write(_out, _res.encode())
"""


def _mount(src, target, fstype, flags, data=None):
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if _libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {fstype or src} on {target}: {os.strerror(err)}")


def _mountpoints():
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4].replace("\\040", " ") for line in f]


def _isolate_fs(job):
    """Read-only world, hidden paths, and a private /tmp. Returns mounts left writable."""
    failed = []
    for mp in _mountpoints():
        try:
            _mount(None, mp, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
        except OSError:
            failed.append(mp)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={job['tmpfs_mb']}m,nr_inodes=4096,mode=755")
    prefix = os.path.realpath(job["python_prefix"])
    for hidden in job["hidden_paths"]:
        if not os.path.isdir(hidden) or any(e == hidden or e.startswith(hidden.rstrip("/") + "/") for e in _ESSENTIAL):
            continue  # hiding it would hide the system the interpreter runs on
        keep = prefix == hidden or prefix.startswith(hidden.rstrip("/") + "/")
        if keep:  # stage the interpreter before it is covered, then put it back
            os.makedirs("/tmp/.python", exist_ok=True)
            _mount(prefix, "/tmp/.python", None, MS_BIND | MS_REC)
        _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        if keep:
            os.makedirs(prefix, exist_ok=True)
            _mount("/tmp/.python", prefix, None, MS_BIND | MS_REC)
            _mount(None, prefix, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
            _libc.umount2(b"/tmp/.python", MNT_DETACH)
            os.rmdir("/tmp/.python")
        _mount(None, hidden, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return failed


def _limits(job, test_cpu):
    """preexec_fn for a test process: rlimits, no new privileges, then the sandbox uid."""
    mem = job["memory_mb"] * 2**20

    def apply():
        resource.setrlimit(resource.RLIMIT_CPU, (test_cpu, test_cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (job["output_limit"] + 1,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        if job["uid"] is not None:
            _libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: no setuid binaries
            os.setgroups([])
            os.setgid(job["uid"])
            os.setuid(job["uid"])
        if job["max_procs"] is not None:  # per real uid, so set after the switch
            resource.setrlimit(resource.RLIMIT_NPROC, (job["max_procs"],) * 2)

    return apply


def _wait(child, timeout):
    """True if the child exited within `timeout`; a pidfd wakes us exactly at exit."""
    if not hasattr(os, "pidfd_open"):
        try:
            child.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    fd = os.pidfd_open(child.pid)
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _sweep(root_pid, child):
    """Kill everything the test left running, and reap it (the test's own process first,
    so its exit status is kept)."""
    if root_pid:
        try:
            os.kill(-1, signal.SIGKILL)  # from PID 1: every other process in the namespace
        except ProcessLookupError:
            pass
        child.wait()
        while True:  # orphans re-parent to us: reap them all
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
    else:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    child.returncode is None and child.wait()


def _empty(path):
    for root, dirs, files in os.walk(path, topdown=False):
        for f in files:
            os.unlink(os.path.join(root, f))
        for d in dirs:
            p = os.path.join(root, d)
            os.unlink(p) if os.path.islink(p) else os.rmdir(p)


def _tokens_match(got, want):
    g, w = got.split(), want.split()
    if g == w:
        return True
    if len(g) != len(w):
        return False
    for a, b in zip(g, w):
        if a == b:
            continue
        if not any(c in b for c in ".eE"):  # float tolerance only where the answer is a float
            return False
        try:
            fa, fb = float(a), float(b)
        except ValueError:
            return False
        if not math.isclose(fa, fb, rel_tol=1e-6, abs_tol=1e-6):
            return False
    return True


def _same(a, b):
    """`a == b` for JSON values, except that true and false are not the numbers 1 and 0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _call_match(got, want):
    try:
        value = json.loads(got)
    except ValueError:
        return False
    return _same(value, want) or _same([value], want)  # APPS/TACO often wrap the expected value in a list


def _tail(path, n=2000):
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - n))
        return f.read().decode("utf-8", "replace")


def _run_test(job, test, work, io, root_pid):
    wall = job["timeout"]
    cpu = max(1, math.ceil(wall))
    _empty(work)  # a fresh working directory for every test
    with open(os.path.join(work, "solution.py"), "w") as f:
        f.write(job["code"])
    call = "fn_name" in test
    stdin_text = json.dumps({"fn_name": test["fn_name"], "args": test["args"]}) if call else test["input"]
    paths = {k: os.path.join(io, k) for k in ("in", "out", "err")}
    with open(paths["in"], "w") as f:
        f.write(stdin_text)
    argv = [job["python"], "-I", "-B", "-X", "utf8"] + ([] if job["site"] else ["-S"])
    argv += ["-c", (_GUARD if job["guard"] else "") + (_RUN_CALL if call else _RUN_FILE)]
    t0 = time.monotonic()
    with open(paths["in"], "rb") as fi, open(paths["out"], "wb") as fo, open(paths["err"], "wb") as fe:
        child = subprocess.Popen(argv, stdin=fi, stdout=fo, stderr=fe, cwd=work, env=job["env"],
                                 start_new_session=True, preexec_fn=_limits(job, cpu))
    timed_out = not _wait(child, wall)
    elapsed = time.monotonic() - t0
    if not timed_out:
        child.wait()  # reap it here, before the sweep, to keep its own exit status
    _sweep(root_pid, child)
    rc, err = child.returncode, _tail(paths["err"])
    size = os.path.getsize(paths["out"])
    if timed_out or rc in (-signal.SIGXCPU, -signal.SIGKILL):
        verdict = "timeout"
    elif size > job["output_limit"] or (rc != 0 and (rc == -signal.SIGXFSZ or "File too large" in err)):
        verdict = "output_limit"
    elif rc != 0:  # stderr only explains a failure: a passing program may print anything there
        verdict = "memory" if "MemoryError" in err or "Cannot allocate memory" in err else "runtime_error"
    else:
        with open(paths["out"], encoding="utf-8", errors="replace") as f:
            got = f.read()
        ok = _call_match(got, test["expected"]) if call else _tokens_match(got, test["output"])
        verdict = "passed" if ok else "wrong_answer"
    return {"verdict": verdict, "time": round(elapsed, 4), "returncode": rc,
            "stderr": err[-500:] if verdict != "passed" else ""}


def _run_job(job, work, io, root_pid):
    results = []
    deadline = time.monotonic() + job["total_timeout"]
    for test in job["tests"]:
        if time.monotonic() > deadline:
            results.append({"verdict": "timeout", "time": 0.0, "returncode": None,
                            "stderr": "not run: submission time budget spent"})
            continue
        results.append(_run_test(job, test, work, io, root_pid))
        if job["stop_on_failure"] and results[-1]["verdict"] != "passed":
            break
    return {"results": results}


def _reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    """First line: the sandbox settings; then one job per line, one reply line per job."""
    init = json.loads(sys.stdin.readline())
    root_pid = os.getpid() == 1
    base = "/tmp" if root_pid else init["workdir"]
    try:
        writable = _isolate_fs(init) if root_pid else []
        work, io = os.path.join(base, "w"), os.path.join(base, "io")
        os.makedirs(work, mode=0o700, exist_ok=True)
        os.makedirs(io, mode=0o700, exist_ok=True)
        if init["uid"] is not None:
            os.chown(work, init["uid"], init["uid"])
    except Exception as e:  # noqa: BLE001 - reported to the caller as sandbox_error
        _reply({"error": f"set-up failed: {type(e).__name__}: {e}"})
        return
    _reply({"ready": True, "fs_writable": writable})
    for line in sys.stdin:
        try:
            out = _run_job({**init, **json.loads(line)}, work, io, root_pid)
        except Exception as e:  # noqa: BLE001 - one bad job must not end the supervisor
            out = {"error": f"{type(e).__name__}: {e}"}
        _reply(out)


if __name__ == "__main__":
    main()
