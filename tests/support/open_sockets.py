"""Which of this process's sockets are still connected to given local ports (a closed client leaves none)."""

from __future__ import annotations

import gc
import socket


def connections_to(ports: frozenset[int]) -> list[int]:
    """The ports among `ports` that a socket of this process is still connected to."""
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, socket.socket) and obj.fileno() != -1:
            try:
                peer = obj.getpeername()
            except OSError:  # not connected
                continue
            if isinstance(peer, tuple) and peer[1] in ports:
                found.append(peer[1])
    return found
