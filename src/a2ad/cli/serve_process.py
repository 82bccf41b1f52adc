"""One process of ``a2ad serve --workers N``, started by the group's parent
(supervisor.py) as ``python -m a2ad.cli.serve_process FD``.

FD is its control socket to the parent. The parent writes one line of JSON there:
the ``serve`` flags, the secret key, the listening socket's descriptor (and the
metrics port's, and the group's metrics directory), this process's number and,
for a SQLite store, its place in the group. The process then serves as a single
``a2ad serve`` does, but prints no banner (the parent does, once all serve): it
says "ready" on the control socket once it serves, and shuts down when the
parent is gone.
"""

from __future__ import annotations

import json
import os
import socket
import sys

from ..assembly import assemble
from ..store.sqlite_group import SqliteGroup
from .agent_specs import load_agents
from .logs import access_fraction, configure_logging, keep_logging
from .serve import _config, _find_modules_here, _metrics, _Server, _url, console
from .serve_grpc import grpc_server
from .serve_settings import open_store, read_settings
from .startup import STARTUP_FAILURE


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[1]))
    control.set_inheritable(False)  # an agent's subprocess must not keep it open
    order = json.loads(_read_line(control))
    flags = order["flags"]
    configure_logging(
        flags["log_level"],
        fields={"worker": order["worker"], "pid": os.getpid()},
        log_format=flags["log_format"],
        access=access_fraction(flags["access_log"]) is not None,
    )
    _find_modules_here()
    listening = socket.socket(fileno=order["listening"])
    listening.set_inheritable(False)
    group = SqliteGroup(**order["group"]) if order["group"] is not None else None
    if group is not None and group.lock_fd is not None:
        os.set_inheritable(group.lock_fd, False)
    try:
        settings = read_settings(flags)
        task_store = open_store(settings, group=group)
        agents = load_agents(
            list(settings.agents),
            settings.default_agent,
            _url(listening),
            settings.model,
            settings.upstream_auth,
        )
    except ValueError as exc:  # the parent read the same flags: a file changed since
        console.print(f"error: {exc}", markup=False, soft_wrap=True)
        return 2
    keep_logging()  # an agent's library may have reconfigured logging as it loaded
    shared = order["metrics"]
    metrics_listening = None
    if shared["listening"] is not None:
        metrics_listening = socket.socket(fileno=shared["listening"])
        metrics_listening.set_inheritable(False)
    metrics = _metrics(settings, metrics_listening, shared["share"])
    key = bytes.fromhex(order["key"])
    application = assemble(agents, settings.app_settings(key, metrics), store=task_store)
    front = (
        grpc_server(settings.grpc, application, settings.host, _url(listening), shared=True)
        if settings.grpc is not None
        else None
    )
    server = _Server(_config(settings, application), application, [], control, grpc=front)
    try:
        server.run(sockets=[listening])
    finally:
        if metrics is not None:
            metrics.close()
    return STARTUP_FAILURE if server.startup_failed else 0


def _read_line(control: socket.socket) -> bytes:
    received = b""
    while not received.endswith(b"\n"):
        more = control.recv(65536)
        if not more:
            raise SystemExit("a2ad: the parent process closed the control socket")
        received += more
    return received


if __name__ == "__main__":
    sys.exit(main(sys.argv))
