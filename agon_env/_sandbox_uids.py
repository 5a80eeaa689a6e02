"""Host-wide uid ranges for namespace sandboxes, so no two live graders share a uid.

`RLIMIT_NPROC` counts processes and threads per uid across the whole host, so two
`Sandbox`es running solutions as the same uid share one budget: a fork bomb in one makes
a correct, threaded program in the other fail. Each live `Sandbox` therefore holds its own
range of uids, recorded in `TABLE` (one ``start count pid starttime`` line per range)
under an exclusive `fcntl` lock. A range whose owner has exited (its pid is gone, or was
reused by a process with another start time) is reclaimed by the next allocation.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from typing import Iterator

TABLE = "/run/agon-sandbox-uids" if os.access("/run", os.W_OK) else "/tmp/agon-sandbox-uids"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@contextmanager
def _locked_table(path: str) -> Iterator[list[tuple[int, int, int, str]]]:
    """The live entries, under the lock; the caller edits the list in place to write it back."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        entries = []
        for line in f:
            parts = line.split()
            if len(parts) == 4 and all(p.isdigit() for p in parts[:3]):
                start, count, pid = map(int, parts[:3])
                if _start_time(pid) == parts[3]:  # owner still alive: keep its range
                    entries.append((start, count, pid, parts[3]))
        yield entries
        f.seek(0)
        f.truncate()
        f.write("".join(f"{s} {c} {p} {t}\n" for s, c, p, t in entries))
        f.flush()


def acquire(count: int, base: int, pool: int, path: str = TABLE) -> int:
    """Reserve `count` uids in [base, base + pool) for this process; returns the first."""
    me = (os.getpid(), _start_time(os.getpid()) or "0")
    with _locked_table(path) as entries:
        start = base  # the lowest gap that fits
        for s, c, *_ in sorted(entries):
            if s >= start + count:
                break
            start = max(start, s + c)
        if start + count > base + pool:
            held = ", ".join(f"{s}-{s + c - 1} (pid {p})" for s, c, p, _ in sorted(entries))
            raise RuntimeError(f"no {count} free sandbox uids in {base}-{base + pool - 1} (held: {held}); "
                               f"close other Sandboxes, or raise SandboxConfig.uid_pool")
        entries.append((start, count, *me))
    return start


def release(start: int, path: str = TABLE) -> None:
    """Give back this process's range that starts at `start`."""
    with _locked_table(path) as entries:
        entries[:] = [e for e in entries if not (e[0] == start and e[2] == os.getpid())]
