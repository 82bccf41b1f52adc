"""``a2ad serve --grpc-port`` as a user runs it: a real process, its banner, its
card's GRPC interface, the official SDK's client choosing gRPC from that card,
the same tasks over gRPC and JSON-RPC, TLS, Ctrl-C ending an open gRPC stream
with its task's final event, and the usage errors of the flags."""

from __future__ import annotations

import datetime
import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2, a2a_pb2_grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from google.protobuf import json_format

from .jsonrpc import answer, rpc_body
from .served import Served, run_a2ad

AGENT = ("--agent", "tests.scripted:ScriptedAgent")
V1 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Served, str]]:
    """One ``a2ad serve --grpc-port 0`` for the module, and its gRPC address."""
    with Served(*AGENT, "--store", "memory", "--grpc-port", "0") as server:
        address = server.expect(
            r"gRPC:\s+(\S+)\s+\(A2A 1\.0 lf\.a2a\.v1\.A2AService and 0\.3 .*plaintext"
        )
        yield server, address.group(1)


def _text(message_id: str, text: str) -> a2a_pb2.Message:
    return a2a_pb2.Message(
        message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )


async def test_the_card_lists_grpc_and_the_sdk_client_sends_by_it_to_the_same_tasks(
    served: tuple[Served, str],
) -> None:
    server, address = served
    async with httpx.AsyncClient(base_url=server.url) as http:
        card_json = (await http.get("/.well-known/agent-card.json")).json()
        interfaces = card_json["supportedInterfaces"]
        assert interfaces[-2:] == [
            {"url": address, "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": address, "protocolBinding": "GRPC", "protocolVersion": "0.3"},
        ]
        assert {"url": address, "transport": "GRPC"} in card_json["additionalInterfaces"]
        card = json_format.ParseDict(card_json, a2a_pb2.AgentCard(), ignore_unknown_fields=True)
        config = ClientConfig(
            streaming=True,
            grpc_channel_factory=grpc.aio.insecure_channel,
            supported_protocol_bindings=["GRPC"],
        )
        client = ClientFactory(config).create(card)
        try:
            request = a2a_pb2.SendMessageRequest(message=_text("p1", "chunks 2"))
            events = [event async for event in client.send_message(request)]
        finally:
            await client.close()
        task_id = events[0].task.id
        assert events[-1].status_update.status.state == a2a_pb2.TASK_STATE_COMPLETED
        # The same task over JSON-RPC: one server, whichever binding.
        body = rpc_body("GetTask", {"id": task_id})
        task = answer(await http.post("/", json=body, headers=V1))["result"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert len(task["artifacts"]) == 1


async def test_ctrl_c_ends_an_open_grpc_stream_with_its_tasks_final_event() -> None:
    with Served(
        *AGENT, "--store", "memory", "--grpc-port", "0", "--shutdown-grace", "0s"
    ) as server:
        address = server.expect(r"gRPC:\s+(\S+)\s").group(1)
        async with grpc.aio.insecure_channel(address) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            request = a2a_pb2.SendMessageRequest(message=_text("h1", "hang"))
            call = stub.SendStreamingMessage(request, metadata=(("a2a-version", "1.0"),))
            assert (await call.read()).task.id
            assert (await call.read()).status_update.status.state == a2a_pb2.TASK_STATE_WORKING
            server.proc.send_signal(2)  # Ctrl-C
            last = await call.read()
            assert last.status_update.status.state == a2a_pb2.TASK_STATE_FAILED
            assert await call.read() is grpc.aio.EOF
            assert await call.code() == grpc.StatusCode.OK
        assert server.proc.wait(20) == 0


async def test_the_cards_give_the_public_grpc_address_when_told_one() -> None:
    flags = ("--grpc-port", "0", "--grpc-public-address", "a2a.example.com:443")
    with Served(*AGENT, "--store", "memory", *flags) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            card = (await http.get("/.well-known/agent-card.json")).json()
    grpc_urls = {i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"}
    assert grpc_urls == {"a2a.example.com:443"}
    assert {"url": "a2a.example.com:443", "transport": "GRPC"} in card["additionalInterfaces"]


def _self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_grpc_over_tls_with_the_given_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    flags = ("--grpc-port", "0", "--grpc-tls-cert", str(cert), "--grpc-tls-key", str(key))
    with Served(*AGENT, "--store", "memory", *flags) as server:
        address = server.expect(r"gRPC:\s+(\S+)\s+\(A2A 1\.0 .*, TLS\)")
        trusted = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        async with grpc.aio.secure_channel(address.group(1), trusted) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            sent = await stub.SendMessage(a2a_pb2.SendMessageRequest(message=_text("t1", "hi")))
            assert sent.task.status.state == a2a_pb2.TASK_STATE_COMPLETED
        # A plaintext client gets no answer from a TLS port.
        async with grpc.aio.insecure_channel(address.group(1)) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.GetTask(a2a_pb2.GetTaskRequest(id="x"), timeout=5)
            assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


def test_the_grpc_flags_usage_errors_name_the_flag(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    cases = [
        (("--grpc-tls-cert", str(cert)), "give --grpc-port"),
        (("--grpc-port", "0", "--grpc-tls-cert", str(cert)), "needs --grpc-tls-key"),
        (
            ("--grpc-port", "0", "--grpc-tls-cert", str(key), "--grpc-tls-key", "nowhere.pem"),
            "--grpc-tls-key nowhere.pem",
        ),
        (("--grpc-port", "0", "--grpc-error-table", "2.0"), "give 1.0.1 or 1.0.0"),
        (("--grpc-public-address", "a2a.example.com:443"), "give --grpc-port"),
        (("--grpc-port", "0", "--grpc-public-address", "a2a.example.com"), "give HOST:PORT"),
    ]
    for flags, said in cases:
        done = run_a2ad("serve", "--store", "memory", *flags)
        assert done.returncode == 2, (flags, done.stderr)
        assert said in " ".join(done.stderr.split()), (flags, done.stderr)


def test_a_grpc_port_in_use_is_refused_at_start_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_a2ad("serve", "--store", "memory", "--port", "0", "--grpc-port", str(port))
    assert done.returncode == 3, done.stderr
    assert f"--grpc-port {port}" in done.stderr and "in use" in done.stderr.lower()
