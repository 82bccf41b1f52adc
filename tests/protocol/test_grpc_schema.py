"""A2A's gRPC schemas as a2ad keeps and loads them (protocol/grpc_schema): the spec's
protos, compiled as scripts/grpc_schema.py compiles them, loaded in pools of their own
beside the official SDK's generated code, and agreeing with a2ad's own JSON."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, json_format

from a2ad.protocol.dialect import Operation, method_name
from a2ad.protocol.grpc_schema import Schema
from a2ad.protocol.model import (
    Artifact,
    Message,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
)
from a2ad.protocol.v1 import V1

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "src" / "a2ad" / "protocol" / "grpc_schema"
SPEC = ROOT.parent / "shared" / "spec"  # beside the checkout, where the project's spec lives


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "grpc_schema_script", ROOT / "scripts" / "grpc_schema.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()  # what makes the kept sets, and the spec's name of each kept proto


@pytest.mark.parametrize("name", sorted(SCRIPT.SPEC_NAMES))
def test_each_kept_descriptor_set_is_what_protoc_makes_of_its_kept_proto(
    name: str, tmp_path: Path
) -> None:
    made = tmp_path / f"{name}.binpb"
    SCRIPT.compile_set(KEPT / f"{name}.proto", made)
    kept = descriptor_pb2.FileDescriptorSet.FromString((KEPT / f"{name}.binpb").read_bytes())
    fresh = descriptor_pb2.FileDescriptorSet.FromString(made.read_bytes())
    assert [f.name for f in kept.file] == [f.name for f in fresh.file]
    assert kept == fresh, f"{name}.binpb is stale: run scripts/grpc_schema.py"


@pytest.mark.parametrize(("name", "spec_name"), sorted(SCRIPT.SPEC_NAMES.items()))
def test_each_kept_proto_is_the_specs(name: str, spec_name: str) -> None:
    if not SPEC.is_dir():
        pytest.skip(f"no spec folder at {SPEC} to compare with (a checkout on its own)")
    assert (KEPT / f"{name}.proto").read_bytes() == (SPEC / spec_name).read_bytes(), (
        f"{name}.proto differs from the spec's {spec_name}: "
        f"run scripts/grpc_schema.py --from {SPEC}"
    )


def test_a2a_1_0_serves_its_eleven_rpcs_named_as_json_rpc_names_them_two_of_them_streams() -> None:
    methods = Schema("1.0").methods()
    assert sorted(methods) == sorted(method_name(V1, op) for op in Operation)
    assert {name for name, (_, _, stream) in methods.items() if stream} == {
        "SendStreamingMessage",
        "SubscribeToTask",
    }
    assert methods["GetTask"] == ("lf.a2a.v1.GetTaskRequest", "lf.a2a.v1.Task", False)


def test_a2a_0_3_serves_its_own_rpc_names() -> None:
    methods = Schema("0.3").methods()
    assert "ListTasks" not in methods  # 0.3 had none
    assert methods["TaskSubscription"][2] is True
    assert methods["GetAgentCard"][1] == "a2a.v1.AgentCard"
    assert "ListTaskPushNotificationConfig" in methods  # singular in 0.3
    assert len(methods) == 10


def test_the_schemas_load_beside_the_official_sdks_generated_code() -> None:
    # The SDK registers lf.a2a.v1 and a2a.v1 in protobuf's default pool: a second
    # registration there would fail, a pool of a2ad's own does not.
    from a2a.compat.v0_3 import a2a_v0_3_pb2
    from a2a.types import a2a_pb2

    ours = Schema("1.0").message("lf.a2a.v1.Task")
    sent = a2a_pb2.Task(id="t1", context_id="c1")
    sent.status.state = a2a_pb2.TASK_STATE_WORKING
    read = ours.FromString(sent.SerializeToString())
    assert (read.id, read.context_id, read.status.state) == ("t1", "c1", sent.status.state)
    old = Schema("0.3").message("a2a.v1.Task")
    assert old.FromString(a2a_v0_3_pb2.Task(id="t2").SerializeToString()).id == "t2"


def test_a_task_as_a2ad_writes_it_in_json_reads_back_the_same_through_the_1_0_schema() -> None:
    task = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=TaskState.INPUT_REQUIRED, timestamp="2026-12-02T20:00:00.123Z"),
        history=[
            Message(
                message_id="m1",
                role=Role.USER,
                parts=[TextPart("hello")],
                context_id="c1",
                task_id="t1",
            )
        ],
        artifacts=[Artifact(artifact_id="a1", parts=[TextPart("hello")], name="echo")],
    )
    written = V1.encode_task(task)
    message = json_format.Parse(written, Schema("1.0").message("lf.a2a.v1.Task")())
    assert json_format.MessageToDict(message) == json.loads(written)


def test_a_name_the_schema_lacks_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        Schema("1.0").message("lf.a2a.v1.NoSuchThing")
