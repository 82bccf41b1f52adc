"""What one client can hold of ``a2ad serve``: header floods, slow requests, too many
connections, and the file-descriptor limit, against a real ``a2ad serve`` process
(docs/operations.md, "Connections")."""

from __future__ import annotations

import contextlib
import json
import re
import resource
import select
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..jsonrpc import rpc_body
from ..process_output import ProcessOutput

A2AD = Path(sys.executable).parent / "a2ad"
MAX_CONNECTIONS = 20
LIMIT_MESSAGE = "connection limit reached"


class Server(ProcessOutput):
    """``a2ad serve --port 0 …`` started by a shell that first sets the soft limit on
    open files (``ulimit``), its output read on a thread."""

    expect_timeout = 15.0

    def __init__(self, *args: str, ulimit: str) -> None:
        command = " ".join([str(A2AD), "serve", "--port", "0", "--store", "memory", *args])
        self.proc = subprocess.Popen(
            ["sh", "-c", f"{ulimit} && exec {command}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.watch(self.proc)
        port = int(self.expect(r"JSON-RPC:\s+http://127\.0\.0\.1:(\d+)/").group(1))
        self.address = ("127.0.0.1", port)
        self.url = f"http://127.0.0.1:{port}/"

    def log(self, message: str) -> list[dict[str, Any]]:
        """The JSON log lines whose ``msg`` starts with ``message``."""
        found = []
        for line in self.output.splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                if entry["msg"].startswith(message):
                    found.append(entry)
        return found

    def memory_kib(self, field: str) -> int:
        """``VmRSS`` (resident now) or ``VmHWM`` (the most it ever was), in KiB."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(rf"{field}:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def soft_ulimit() -> tuple[int, int]:
    """A soft limit below the hard one (where there is room), and the hard one."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard = 1 << 20 if hard == resource.RLIM_INFINITY else hard
    return min(1024, hard // 2), hard


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    soft, _ = soft_ulimit()
    s = Server(
        *("--header-timeout", "1s", "--body-timeout", "2s"),
        *("--max-connections", str(MAX_CONNECTIONS), "--shutdown-grace", "0"),
        ulimit=f"ulimit -Sn {soft}",
    )
    try:
        yield s
    finally:
        s.stop()
    assert "Traceback" not in s.output
    assert "Exception in ASGI application" not in s.output


def stream_request(text: str) -> dict[str, Any]:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    return rpc_body("SendStreamingMessage", {"message": message})


V1 = {"A2A-Version": "1.0"}


def get_task(server: Server, task_id: str) -> httpx.Response:
    with httpx.Client(timeout=10) as http:
        return http.post(server.url, json=rpc_body("GetTask", {"id": task_id}), headers=V1)


def answer_of(raw: bytes) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of one HTTP/1.1 response with a content-length."""
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(re.search(rb"content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
    assert len(body) == length, raw
    assert b"connection: close" in head, raw
    return status, json.loads(body)


def read_to_close(sock: socket.socket, limit: float = 10.0) -> bytes:
    """Everything the server sends until it closes; fails if it keeps the connection."""
    sock.settimeout(limit)
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def flood_until_answered(sock: socket.socket, chunk: bytes, most: int) -> int:
    """Send ``chunk`` again and again until the server answers; the bytes sent."""
    sent = 0
    while not select.select([sock], [], [], 0)[0]:
        assert sent < most, f"the server took {sent} bytes of headers without answering"
        sock.sendall(chunk)
        sent += len(chunk)
    return sent


def error_of(body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
    error = body["error"]
    info = error["data"][0]
    return error["code"], info["reason"], info.get("metadata", {})


@pytest.mark.parametrize("line", ["many lines", "one endless line"])
def test_a_header_flood_gets_431_and_the_server_keeps_its_memory(server: Server, line: str) -> None:
    before = server.memory_kib("VmRSS")
    with socket.create_connection(server.address) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nhost: a2ad\r\n")
        if line == "one endless line":
            sock.sendall(b"x-flood: ")
            chunk = b"a" * 65536
        else:
            chunk = b"".join(b"x-flood-%d: %s\r\n" % (n, b"a" * 200) for n in range(300))
        flood_until_answered(sock, chunk, most=300 * 1024 * 1024)
        status, body = answer_of(read_to_close(sock))
    assert status == 431
    assert error_of(body) == (-32600, "INVALID_REQUEST", {"maxHeaderBytes": "65536"})
    assert body["id"] is None
    # Without the cap the flood is kept until the connection ends: 400 MB at its peak.
    assert server.memory_kib("VmHWM") < before + 50 * 1024
    assert server.memory_kib("VmRSS") < before + 50 * 1024
    assert get_task(server, "no-such-task").json()["error"]["code"] == -32001


def test_headers_over_the_limit_in_one_piece_get_431_and_under_it_are_served(
    server: Server,
) -> None:
    def send(header_bytes: int) -> tuple[int, dict[str, Any]]:
        body = json.dumps(rpc_body("GetTask", {"id": "no-such-task"})).encode()
        request = (
            b"POST / HTTP/1.1\r\nhost: a2ad\r\na2a-version: 1.0\r\nconnection: close\r\n"
            b"x-big: %s\r\ncontent-length: %d\r\n\r\n%s" % (b"a" * header_bytes, len(body), body)
        )
        with socket.create_connection(server.address) as sock:
            sock.sendall(request)
            return answer_of(read_to_close(sock))

    served, body = send(60_000)
    assert served == 200
    assert body["error"]["code"] == -32001
    refused, body = send(70_000)
    assert refused == 431
    assert error_of(body)[0] == -32600


def test_headers_that_trickle_in_get_408_after_the_header_timeout(server: Server) -> None:
    with socket.create_connection(server.address) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nhost: a2ad\r\nx-slow: ")
        # A byte every 0.1 s keeps the connection busy but never ends the headers.
        for _ in range(100):
            if select.select([sock], [], [], 0.1)[0]:
                break
            sock.sendall(b"a")
        status, body = answer_of(read_to_close(sock))
    assert status == 408
    code, reason, metadata = error_of(body)
    assert (code, reason, metadata) == (-32600, "INVALID_REQUEST", {"headerTimeoutSeconds": "1"})
    assert "headers did not arrive within 1s" in body["error"]["message"]


def test_a_connection_that_sends_nothing_is_closed_without_an_answer(server: Server) -> None:
    with socket.create_connection(server.address) as sock:
        assert read_to_close(sock) == b""


def test_a_body_that_trickles_in_gets_408_after_the_body_timeout(server: Server) -> None:
    with socket.create_connection(server.address) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nhost: a2ad\r\ncontent-length: 1000\r\n\r\n{")
        for _ in range(100):
            if select.select([sock], [], [], 0.1)[0]:
                break
            sock.sendall(b" ")
        status, body = answer_of(read_to_close(sock))
    assert status == 408
    assert error_of(body) == (-32600, "INVALID_REQUEST", {"bodyTimeoutSeconds": "2"})
    assert "body did not arrive within 2s" in body["error"]["message"]


def test_a_stream_quiet_for_longer_than_both_timeouts_stays_open_to_its_end(
    server: Server,
) -> None:
    # The echo agent sleeps 3 s: no event and no keep-alive (every 15 s) meanwhile.
    with (
        httpx.Client(timeout=10) as http,
        http.stream("POST", server.url, json=stream_request("sleep:3 awake"), headers=V1) as r,
    ):
        events = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
    assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert any("artifactUpdate" in e["result"] for e in events)


def test_connections_past_the_cap_get_503_and_one_log_line_until_some_close(
    server: Server,
) -> None:
    with contextlib.ExitStack() as stack:
        # Streams are the connections a server holds longest; fill the cap with them.
        http = stack.enter_context(
            httpx.Client(timeout=10, limits=httpx.Limits(max_connections=MAX_CONNECTIONS))
        )
        task_ids, streams = [], []
        for _ in range(MAX_CONNECTIONS):
            stream = stack.enter_context(
                http.stream("POST", server.url, json=stream_request("sleep:60 held"), headers=V1)
            )
            # Kept: a line iterator dropped half-read closes its connection.
            streams.append(lines := stream.iter_lines())
            first = next(line for line in lines if line.startswith("data:"))
            task_ids.append(json.loads(first[5:])["result"]["task"]["id"])

        for _ in range(5):
            refused = get_task(server, task_ids[0])
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            assert error_of(refused.json()) == (
                -32000,
                "SERVER_BUSY",
                {"maxConnections": str(MAX_CONNECTIONS)},
            )
            assert "limit of 20 connections" in refused.json()["error"]["message"]
        server.expect(LIMIT_MESSAGE)
        (line,) = server.log(LIMIT_MESSAGE)
        assert line["level"] == "warning"
        assert line["max_connections"] == MAX_CONNECTIONS

    deadline = time.monotonic() + 10
    while (answer := get_task(server, task_ids[0])).status_code == 503:
        assert time.monotonic() < deadline, "the server kept refusing after the streams closed"
        time.sleep(0.05)
    assert answer.json()["result"]["id"] == task_ids[0]
    assert len(server.log(LIMIT_MESSAGE)) == 1


def test_the_soft_file_descriptor_limit_is_raised_to_the_hard_one_at_start(
    server: Server,
) -> None:
    soft, hard = soft_ulimit()
    (line,) = server.log("file-descriptor limit")
    assert (line["fd_limit_was"], line["fd_limit"], line["fd_hard_limit"]) == (soft, hard, hard)


def test_max_connections_is_lowered_to_what_the_file_descriptor_limit_holds() -> None:
    s = Server("--max-connections", "1000", ulimit="ulimit -n 400")
    try:
        (line,) = s.log("max connections lowered")
        assert (line["asked"], line["max_connections"], line["fd_limit"]) == (1000, 272, 400)
    finally:
        s.stop()


@pytest.mark.parametrize("flag", ["--header-timeout", "--body-timeout"])
def test_a_timeout_of_zero_is_refused_naming_the_flag(flag: str) -> None:
    done = subprocess.run(
        [str(A2AD), "serve", "--store", "memory", flag, "0"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert done.returncode == 2
    assert f"{flag}: '0': give a duration above 0" in done.stderr


def test_connections_answered_408_stop_counting_against_the_cap_at_once(server: Server) -> None:
    slow = [socket.create_connection(server.address) for _ in range(MAX_CONNECTIONS)]
    try:
        for sock in slow:
            sock.sendall(b"POST / HTTP/1.1\r\nhost: a2ad\r\n")
        for sock in slow:  # answered, and kept open by the client
            sock.settimeout(10)
            assert sock.recv(12) == b"HTTP/1.1 408"
        assert get_task(server, "no-such-task").json()["error"]["code"] == -32001
    finally:
        for sock in slow:
            sock.close()
