"""A2A's gRPC schemas, loaded where they meet no other copy of them.

The spec's protos (``a2a_v10.proto``: A2A 1.0, package ``lf.a2a.v1``;
``a2a_v03.proto``: A2A 0.3, package ``a2a.v1``) are kept here beside their
compiled descriptor sets (``*.binpb``, every imported file included), which
``scripts/grpc_schema.py`` makes again with grpcio-tools. A ``Schema`` loads a
set into a descriptor pool of its own: the official SDK registers the same
packages in protobuf's default pool, and a second registration there fails
("duplicate symbol"), so a process may hold both. Loading needs protobuf
only (the ``grpc`` extra), and only when asked for: importing this module
imports nothing of protobuf.

The protos are the a2aproject/A2A repository's (A2A 1.0.1 and 0.3.0), under the
Apache License 2.0, copied unchanged (tests/protocol/test_grpc_schema.py checks
them against the project's spec). The 0.3 schema is loaded with three fields
more, which the official SDKs' 0.3 proto has and their clients send and read
(``FilePart.name``, ``Part.metadata``, ``AgentCard.icon_url``: new numbers, so
a peer with the spec's proto passes over them): a file's name, which 0.3's
JSON has, would be lost over gRPC without them.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from google.protobuf.descriptor import ServiceDescriptor  # type: ignore[import-untyped]
    from google.protobuf.descriptor_pool import DescriptorPool  # type: ignore[import-untyped]

__all__ = ["SERVICES", "Schema", "Version", "whole_numbers"]

Version = Literal["1.0", "0.3"]

# The service each version's gRPC clients call, and the file that declares it.
SERVICES: dict[Version, str] = {"1.0": "lf.a2a.v1.A2AService", "0.3": "a2a.v1.A2AService"}
_FILES: dict[Version, str] = {"1.0": "a2a_v10", "0.3": "a2a_v03"}


def whole_numbers(value: Any) -> Any:
    """ProtoJSON ``value`` with its whole floats as ints: a
    ``google.protobuf.Struct`` or ``Value`` (a data part, metadata) holds every
    number as a double, so the ``1`` a peer wrote reads ``1.0``, where JSON
    keeps ``1``. Both ends of a2ad's gRPC read messages through it."""
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


class Schema:
    """One version's messages and service, from its descriptor set, in a pool
    of its own. Raises ModuleNotFoundError naming the ``grpc`` extra when
    protobuf is not installed."""

    def __init__(self, version: Version) -> None:
        try:
            from google.protobuf import (  # type: ignore[import-untyped]
                descriptor_pb2,
                descriptor_pool,
            )
        except ModuleNotFoundError as exc:  # pragma: no cover - the extra is installed in tests
            raise ModuleNotFoundError(
                "A2A over gRPC needs protobuf: pip install 'a2ad[grpc]'"
            ) from exc
        self.version = version
        data = resources.files(__package__).joinpath(f"{_FILES[version]}.binpb").read_bytes()
        files = descriptor_pb2.FileDescriptorSet.FromString(data)
        self.pool: DescriptorPool = descriptor_pool.DescriptorPool()
        for file in files.file:  # protoc writes each file after those it imports
            if file.package == "a2a.v1":
                _with_sdk_fields(file, descriptor_pb2.FieldDescriptorProto)
            self.pool.Add(file)
        self.service: ServiceDescriptor = self.pool.FindServiceByName(SERVICES[version])
        self._classes: dict[str, Any] = {}

    def message(self, name: str) -> Any:
        """The message class of the full ``name`` (``lf.a2a.v1.Task``); KeyError
        for a name the schema lacks."""
        found = self._classes.get(name)
        if found is None:
            from google.protobuf import message_factory

            found = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name))
            self._classes[name] = found
        return found

    def methods(self) -> dict[str, tuple[str, str, bool]]:
        """Each rpc of the service by name: its request's and response's full
        message names, and whether it answers with a stream."""
        return {
            m.name: (m.input_type.full_name, m.output_type.full_name, m.server_streaming)
            for m in self.service.methods
        }


# The official SDKs' 0.3 proto's fields the spec's 0.3 proto lacks:
# (message, field, number, type, message type, JSON name).
_SDK_03_FIELDS = (
    ("FilePart", "name", 4, "TYPE_STRING", "", "name"),
    ("Part", "metadata", 4, "TYPE_MESSAGE", ".google.protobuf.Struct", "metadata"),
    ("AgentCard", "icon_url", 18, "TYPE_STRING", "", "iconUrl"),
)


def _with_sdk_fields(file: Any, field_type: Any) -> None:
    """The 0.3 file ``file`` with ``_SDK_03_FIELDS`` added (none it has already)."""
    messages = {message.name: message for message in file.message_type}
    for message_name, name, number, kind, type_name, json_name in _SDK_03_FIELDS:
        message = messages[message_name]
        if any(field.number == number or field.name == name for field in message.field):
            continue
        field = message.field.add(name=name, number=number, json_name=json_name)
        field.label = field_type.LABEL_OPTIONAL
        field.type = field_type.Type.Value(kind)
        if type_name:
            field.type_name = type_name
