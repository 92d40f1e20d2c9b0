"""Network namespaces for tests that stand "hosts" up as processes on one
machine: each host gets a namespace of its own, linked to the machine (the
root namespace, where the engines run) by a veth pair. A process started
with `NamespacedHost.prefix` then reaches the engines only where they listen
beyond loopback, as a host on another machine would; the machine's loopback
(where the engines' unauthenticated ports stay) is not its loopback.

One address for the engines: the root end of every link carries the same
address, point to point (`/32` with the host's address as its peer; the host
end the reverse), so every host dials the same URLs, as hosts on a network
dial one engines machine, and each engine listens on that one address, not
on 0.0.0.0. The run host in the root namespace reaches it too (it is local).

Names carry this process's pid (a leftover of a killed run has another pid,
and one of the same pid is removed first) and so does the address block
(10.213.<pid % 250 + 1>.0), so the links of a leftover that still has a
process in it do not collide either (unless its pid falls in the same
block). The veth end inside a namespace is `eth0`, as on a host. For the
same reason one process holds one set at a time: a second `namespaced_hosts`
while the first is up would take the first's names and address (removing
its namespaces as leftovers), so it is refused.

Needs the `ip` command and root (`ip netns add` mounts under /run/netns).
Where either is missing, or the sandbox refuses a step, `namespaced_hosts`
raises `NamespacesUnavailable` with the reason after undoing what it made:
the caller falls back to loopback or skips, never fails for it. No Dagster
and no engine here: `ip` commands and one socket.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

NETNS_DIR = Path("/run/netns")

#: held while this process's namespaces are up (their names and addresses are per process)
_IN_USE = threading.Lock()

#: run inside a namespace: exit 0 when host:port accepts a TCP connection,
#: else print the error's class name (ConnectionRefusedError, TimeoutError...)
_PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), float(sys.argv[3])).close()
except OSError as exc:
    print(type(exc).__name__)
    sys.exit(1)
"""


class NamespacesUnavailable(Exception):
    """This machine or sandbox cannot give the hosts namespaces of their own (why: str(exc))."""


@dataclass(frozen=True, slots=True)
class NamespacedHost:
    """A host's network namespace: its name, its own address inside it and the
    engines' address at the root end of its link."""

    label: str
    namespace: str
    address: str
    engines_address: str

    @property
    def prefix(self) -> list[str]:
        """Put before a command to run it inside the namespace (same files, same user)."""
        return ["ip", "netns", "exec", self.namespace]

    def inode(self) -> int:
        """The namespace's identity: what `/proc/<pid>/ns/net` of a process in it stats to."""
        return os.stat(NETNS_DIR / self.namespace).st_ino

    def connect_error(self, host: str, port: int, timeout: float = 3.0) -> str | None:
        """From inside the namespace: None if host:port accepts a TCP
        connection, else the error's name (ConnectionRefusedError...)."""
        probe = [*self.prefix, sys.executable, "-c", _PROBE, host, str(port), str(timeout)]
        done = subprocess.run(probe, capture_output=True, text=True, timeout=timeout + 30)
        if done.returncode == 0:
            return None
        return done.stdout.strip() or f"exit {done.returncode}: {done.stderr.strip()[-300:]}"


def net_namespace_of(pid: int) -> int:
    """The network namespace a process is in (the inode `/proc/<pid>/ns/net` names)."""
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise NamespacesUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


def _remove(namespace: str, root_end: str) -> None:
    """Remove a link and a namespace if they exist. The root end first: deleting
    it destroys the pair at once, where a deleted namespace's veth goes
    only when the kernel gets to it."""
    for args in (["link", "del", root_end], ["netns", "del", namespace]):
        subprocess.run(["ip", *args], capture_output=True, timeout=30)


def _reaches(host: NamespacedHost) -> str | None:
    """None if a listener on the engines' address is reachable from inside the
    namespace (a firewall or a sandbox could drop it), else why not."""
    with socket.socket() as listener:
        listener.bind((host.engines_address, 0))
        listener.listen(1)
        return host.connect_error(host.engines_address, listener.getsockname()[1])


@contextlib.contextmanager
def namespaced_hosts(labels: Sequence[str]) -> Iterator[dict[str, NamespacedHost]]:
    """A namespace per label, each linked to the root namespace, for the
    duration of the block: {label: host}. Everything made is removed on the
    way out, also when the block raises, and when a step of the set-up fails
    (then NamespacesUnavailable says which)."""
    if shutil.which("ip") is None:
        raise NamespacesUnavailable("the `ip` command (iproute2) is not installed")
    if not _IN_USE.acquire(blocking=False):
        # not NamespacesUnavailable: the caller would fall back to loopback
        # and hide that two users of one process overlapped
        raise RuntimeError("this process's namespaces are up already: one set at a time")
    try:
        with _namespaces(labels) as hosts:
            yield hosts
    finally:
        _IN_USE.release()


@contextlib.contextmanager
def _namespaces(labels: Sequence[str]) -> Iterator[dict[str, NamespacedHost]]:
    """namespaced_hosts' work, under its lock (released only after the removal)."""
    pid = os.getpid()
    block = f"10.213.{pid % 250 + 1}"
    engines = f"{block}.1"
    hosts: dict[str, NamespacedHost] = {}
    made: list[tuple[str, str]] = []
    namespace = ""
    try:
        for n, label in enumerate(labels):
            namespace, root_end = f"gw-{pid}-{label}", f"gw{pid}n{n}"
            _remove(namespace, root_end)  # a leftover of a killed run with this pid
            made.append((namespace, root_end))
            host = NamespacedHost(label, namespace, f"{block}.{n + 2}", engines)
            _ip("netns", "add", namespace)
            _ip("link", "add", root_end, "type", "veth", "peer", "name", "eth0", "netns", namespace)
            _ip("addr", "add", f"{engines}/32", "peer", f"{host.address}/32", "dev", root_end)
            _ip("link", "set", root_end, "up")
            inside = ["-n", namespace]
            _ip(
                *inside, "addr", "add", f"{host.address}/32", "peer", f"{engines}/32", "dev", "eth0"
            )
            _ip(*inside, "link", "set", "eth0", "up")
            _ip(*inside, "link", "set", "lo", "up")
            why = _reaches(host)
            if why is not None:
                raise NamespacesUnavailable(
                    f"{engines} is not reachable from namespace {namespace}: {why}"
                )
            hosts[label] = host
    except BaseException as exc:
        for namespace, root_end in reversed(made):
            _remove(namespace, root_end)
        if isinstance(exc, OSError | subprocess.TimeoutExpired):
            raise NamespacesUnavailable(f"setting up {namespace}: {exc}") from exc
        raise
    try:
        yield hosts
    finally:
        for namespace, root_end in reversed(made):
            _remove(namespace, root_end)
