"""Which parts are internal, and what a caller who may not see them gets of a
task, a reply and each kind of event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from a2ad import (
    Artifact,
    DataPart,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskContext,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2ad.protocol.internal import (
    is_internal,
    visible,
    visible_page,
    visible_reply,
    visible_task,
)
from a2ad.protocol.model import ListTasksResponse

internal = TaskContext.internal


def agent(*parts: Part) -> Message:
    return Message(message_id="m", role=Role.AGENT, parts=list(parts))


def task(
    history: list[Message], artifacts: Sequence[Artifact] = (), status: Message | None = None
) -> Task:
    return Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.WORKING, message=status or msgspec.UNSET),
        history=history,
        artifacts=list(artifacts),
    )


@pytest.mark.parametrize(
    "metadata",
    [
        {"a2ad": {"internal": True}},
        {"adk_type": "function_call"},
        {"adk_type": "function_response"},
        {"adk_type": "executable_code"},
        {"adk_type": "code_execution_result"},
        {"kagent_type": "function_call"},
        {"adk_thought": True},
        {"kagent_thought": True},
    ],
)
def test_a2ads_marker_and_the_frameworks_conventions_make_a_part_internal(
    metadata: dict[str, Any],
) -> None:
    assert is_internal(DataPart({"name": "search"}, metadata=metadata))


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        {"a2ad": {"internal": False}},
        {"a2ad": "internal"},
        {"adk_type": "text"},
        {"adk_thought": False},
        {"type": "function_call"},  # too generic a key to read as a convention
        {"note": "function_call"},
    ],
)
def test_other_metadata_leaves_a_part_public(metadata: dict[str, Any] | None) -> None:
    assert not is_internal(TextPart("hi", metadata=metadata))


def test_marking_keeps_the_parts_other_metadata() -> None:
    (part,) = internal(TextPart("x", metadata={"source": "tool", "a2ad": {"seen": 1}}))
    assert part.metadata == {"source": "tool", "a2ad": {"seen": 1, "internal": True}}
    assert internal("y")[0].text == "y"


def test_a_task_without_internal_parts_is_returned_as_it_is() -> None:
    plain = task(
        [Message(message_id="u", role=Role.USER, parts=[TextPart("q")]), agent(TextPart("a"))],
        [Artifact(artifact_id="a", parts=[TextPart("r", metadata={"k": 1})])],
        status=agent(TextPart("ok")),
    )
    assert visible_task(plain) is plain
    page = ListTasksResponse(tasks=[plain], next_page_token="", page_size=1, total_size=1)
    assert visible_page(page) is page


def test_internal_parts_leave_and_what_they_leave_empty_goes_with_them() -> None:
    user = Message(message_id="u", role=Role.USER, parts=[*internal("the user's own")])
    mixed = agent(TextPart("Searching"), *internal(DataPart({"call": 1})))
    only = agent(DataPart({"r": 2}, metadata={"adk_type": "function_response"}))
    shown = visible_task(
        task(
            [user, mixed, only],
            [
                Artifact(artifact_id="scratch", parts=internal("notes")),
                Artifact(artifact_id="answer", parts=[TextPart("42"), *internal("why")]),
            ],
            status=only,
        )
    )
    # The user's message is the user's: never hidden.
    assert [m.parts for m in shown.history] == [user.parts, [TextPart("Searching")]]
    assert [(a.artifact_id, a.parts) for a in shown.artifacts] == [("answer", [TextPart("42")])]
    assert shown.status == TaskStatus(state=TaskState.WORKING)


def test_events_lose_internal_parts_and_an_artifact_update_of_nothing_else_is_not_sent() -> None:
    status = TaskStatusUpdateEvent(
        task_id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.WORKING, message=agent(*internal("thinking"))),
    )
    assert visible(status) == msgspec.structs.replace(
        status, status=TaskStatus(state=TaskState.WORKING)
    )
    update = TaskArtifactUpdateEvent(
        task_id="t", context_id="c", artifact=Artifact(artifact_id="a", parts=internal("x"))
    )
    assert visible(update) is None
    public = msgspec.structs.replace(
        update, artifact=Artifact(artifact_id="a", parts=[TextPart("y")])
    )
    assert visible(public) is public


def test_a_reply_of_internal_parts_only_keeps_one_empty_text_part() -> None:
    assert visible_reply(agent(*internal("secret"))).parts == [TextPart("")]
    assert visible_reply(agent(TextPart("hi"), *internal("secret"))).parts == [TextPart("hi")]
