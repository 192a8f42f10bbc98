"""A child's lifetime tied to another process: it ends when that process ends, however it
ends (kill -9 included). The worker pool, isolated calls and fork servers' children use it."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading
import time


def exit_with_parent(parent: int) -> None:
    """End this worker when the parent dies, however it dies (kill -9 included).

    A forked worker holds copies of the parent's ends of every pipe made before it, so it
    would never see end-of-file. Linux kills it on the parent's death (PR_SET_PDEATHSIG);
    elsewhere a thread watches the parent's pid.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # it died before the prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="gero-parent-watch", daemon=True).start()


def exit_with_process(pid: int) -> None:
    """End this worker when process ``pid`` ends, however it ends: for a fork server's
    child, whose parent is the server, while the process it works for is the one that
    asked the server. (The server outlives that process as long as any of its children
    does: each holds the server's keep-alive pipe.)"""

    def watch() -> None:
        try:
            handle = os.pidfd_open(pid)  # readable once the process has ended
        except (AttributeError, OSError):  # not Linux 5.3+: poll the pid
            while _alive(pid):
                time.sleep(0.5)
        else:
            select.select([handle], [], [])
        os._exit(1)

    threading.Thread(target=watch, name="gero-client-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_PR_SET_PDEATHSIG = 1
