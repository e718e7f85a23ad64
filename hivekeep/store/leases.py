"""Lease holders: who holds a lock, and whether that process still exists.

A holder name is ``host:pid:token``. A lease whose holder lives on this host under a pid that no
longer exists was left by a crash and is free at once, instead of blocking compaction until its
expiry; a holder on another host is trusted until the lease expires.
"""

from __future__ import annotations

import os
import socket
import uuid


def new_holder() -> str:
    """A holder name unique to this call, in this process, on this host."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def holder_is_dead(holder: str) -> bool:
    """True only when the holder is certainly gone: same host, and its pid does not exist."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, owned by another user
        return False
    return False
