"""A2A errors as google.rpc statuses (protocol/rpc_status.py): the spec's table, in
its 1.0.1 form and its v1.0.0 one, and the Status message carrying the details,
read back with google.rpc's own types."""

from __future__ import annotations

import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2

from a2ad.protocol import errors
from a2ad.protocol.rpc_status import RPC_CODES, TABLE_1_0_0, rpc_status, status_message

# The spec's table (NOTES.md 3.2): 1.0.1's gRPC column, then the v1.0.0 tag's.
SPEC_TABLE = [
    (errors.TaskNotFoundError, "NOT_FOUND", "NOT_FOUND"),
    (errors.TaskNotCancelableError, "FAILED_PRECONDITION", "FAILED_PRECONDITION"),
    (errors.PushNotificationNotSupportedError, "FAILED_PRECONDITION", "UNIMPLEMENTED"),
    (errors.UnsupportedOperationError, "FAILED_PRECONDITION", "UNIMPLEMENTED"),
    (errors.ContentTypeNotSupportedError, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    (errors.InvalidAgentResponseError, "INTERNAL", "INTERNAL"),
    (errors.ExtendedAgentCardNotConfiguredError, "FAILED_PRECONDITION", "FAILED_PRECONDITION"),
    (errors.ExtensionSupportRequiredError, "FAILED_PRECONDITION", "FAILED_PRECONDITION"),
    (errors.VersionNotSupportedError, "FAILED_PRECONDITION", "UNIMPLEMENTED"),
    # The categories of the spec's 3.3.2, and the JSON-RPC errors as the official SDK maps them.
    (errors.InvalidParamsError, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    (errors.InvalidRequestError, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    (errors.UnauthenticatedError, "UNAUTHENTICATED", "UNAUTHENTICATED"),
    (errors.PermissionDeniedError, "PERMISSION_DENIED", "PERMISSION_DENIED"),
    (errors.InternalError, "INTERNAL", "INTERNAL"),
    (errors.TaskStoreUnavailableError, "UNAVAILABLE", "UNAVAILABLE"),
    (errors.QuotaExceededError, "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"),
]


@pytest.mark.parametrize(("error", "current", "first"), SPEC_TABLE)
def test_each_error_has_the_code_the_specs_table_gives_it(
    error: type[errors.A2AError], current: str, first: str
) -> None:
    assert rpc_status(error("x")) == current
    assert rpc_status(error("x"), table=TABLE_1_0_0) == first


def test_the_code_names_are_google_rpcs_with_their_numbers() -> None:
    assert {name: code_pb2.Code.Value(name) for name in RPC_CODES} == dict(RPC_CODES)


def test_a_task_not_found_status_carries_its_error_info() -> None:
    error = errors.TaskNotFoundError("Task t9 not found", metadata={"taskId": "t9"})
    sent = status_message(error).SerializeToString()
    status = status_pb2.Status.FromString(sent)  # as a client reads the trailer
    assert (status.code, status.message) == (code_pb2.NOT_FOUND, "Task t9 not found")
    assert len(status.details) == 1
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, info.domain, dict(info.metadata)) == (
        "TASK_NOT_FOUND",
        "a2a-protocol.org",
        {"taskId": "t9"},
    )


def test_an_error_about_a_field_names_it_in_a_bad_request_too() -> None:
    error = errors.InvalidParamsError("params.id: required", field="id")
    status = status_pb2.Status.FromString(status_message(error).SerializeToString())
    assert status.code == code_pb2.INVALID_ARGUMENT
    bad = error_details_pb2.BadRequest()
    assert [detail.Is(bad.DESCRIPTOR) for detail in status.details] == [False, True]
    status.details[1].Unpack(bad)
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("id", "params.id: required")
    ]


def test_the_v1_0_0_table_changes_the_status_code_too() -> None:
    error = errors.UnsupportedOperationError("tasks cannot be resubscribed here")
    assert status_message(error).code == code_pb2.FAILED_PRECONDITION
    assert status_message(error, table=TABLE_1_0_0).code == code_pb2.UNIMPLEMENTED
