"""engine.lifecycle.check_event: which event a task in each state may take.

The expected table is written out independently of the implementation:

    submitted, working   -> any status except submitted/unspecified; artifacts;
                            nothing as a follow-up (resume): another one got there first
    input-/auth-required -> a terminal status; working only for the follow-up (resume)
    completed, failed, canceled, rejected -> nothing
"""

from __future__ import annotations

import itertools

import pytest

from a2ad import (
    Artifact,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2ad.engine.lifecycle import InvalidTransitionError, check_event

S = TaskState
TERMINAL = [S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED]
INTERRUPTED = [S.INPUT_REQUIRED, S.AUTH_REQUIRED]
ACTIVE = [S.SUBMITTED, S.WORKING]
# The states a stored task can be in (UNSPECIFIED is only ever a wire value).
LIFECYCLE_STATES = ACTIVE + INTERRUPTED + TERMINAL
ARTIFACT = "artifact"
EVENTS: list[TaskState | str] = [*list(TaskState), ARTIFACT]


def event(kind: TaskState | str) -> TaskStatusUpdateEvent | TaskArtifactUpdateEvent:
    if kind == ARTIFACT:
        return TaskArtifactUpdateEvent(
            task_id="t", context_id="c", artifact=Artifact(artifact_id="a", parts=[TextPart("x")])
        )
    assert isinstance(kind, TaskState)
    return TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=kind))


def allowed(current: TaskState, kind: TaskState | str, resume: bool) -> bool:
    if current in TERMINAL:
        return False
    if current in ACTIVE:
        if resume:
            return False
        return kind == ARTIFACT or kind in [S.WORKING, *INTERRUPTED, *TERMINAL]
    assert current in INTERRUPTED
    if kind in TERMINAL:
        return True
    return resume and kind == S.WORKING


def name(value: object) -> str:
    return value.word if isinstance(value, TaskState) else str(value)


CASES = [
    pytest.param(
        current, kind, resume, id=f"{name(current)}+{name(kind)}{'+resume' if resume else ''}"
    )
    for current, kind, resume in itertools.product(LIFECYCLE_STATES, EVENTS, [False, True])
]


@pytest.mark.parametrize(("current", "kind", "resume"), CASES)
def test_check_event_accepts_exactly_the_lifecycle_table(
    current: TaskState, kind: TaskState | str, resume: bool
) -> None:
    if allowed(current, kind, resume):
        check_event(current, event(kind), resume=resume)
    else:
        with pytest.raises(InvalidTransitionError):
            check_event(current, event(kind), resume=resume)


def test_the_table_covers_every_state_and_event_kind() -> None:
    assert set(LIFECYCLE_STATES) == set(TaskState) - {S.UNSPECIFIED}
    assert len(CASES) == len(LIFECYCLE_STATES) * (len(TaskState) + 1) * 2


@pytest.mark.parametrize("terminal", TERMINAL, ids=name)
def test_refusal_of_a_terminal_task_names_its_state(terminal: TaskState) -> None:
    with pytest.raises(InvalidTransitionError, match=terminal.word):
        check_event(terminal, event(S.WORKING))


@pytest.mark.parametrize("interrupted", INTERRUPTED, ids=name)
def test_interrupted_task_returns_to_working_only_through_a_follow_up(
    interrupted: TaskState,
) -> None:
    with pytest.raises(InvalidTransitionError, match=interrupted.word):
        check_event(interrupted, event(S.WORKING))
    check_event(interrupted, event(S.WORKING), resume=True)


@pytest.mark.parametrize("interrupted", INTERRUPTED, ids=name)
def test_interrupted_task_takes_no_artifacts(interrupted: TaskState) -> None:
    with pytest.raises(InvalidTransitionError, match="artifact"):
        check_event(interrupted, event(ARTIFACT))


def test_a_task_never_goes_back_to_submitted() -> None:
    for current in LIFECYCLE_STATES:
        for resume in (False, True):
            with pytest.raises(InvalidTransitionError):
                check_event(current, event(S.SUBMITTED), resume=resume)
