"""What a store raises: ``StoreError`` and its leaves, each saying when.

StoreError
├── StoreFullError            at the cap, nothing may be evicted
├── StoreUnavailableError     a passing fault: the call may be made again
├── DuplicateMessageError     the message's key is recorded with another task
├── MissingTaskError          no such task (also a KeyError)
├── SequenceConflictError     another writer appended first
├── TerminalTaskError         the task takes no more events
├── EventLimitError           past a size bound
├── WebhookLimitError         past MAX_WEBHOOKS
└── MissingCapabilityError    asked for what the store does not implement
"""

from __future__ import annotations

from ..protocol.model import TaskState

__all__ = [
    "DuplicateMessageError",
    "EventLimitError",
    "MissingCapabilityError",
    "MissingTaskError",
    "SequenceConflictError",
    "StoreError",
    "StoreFullError",
    "StoreUnavailableError",
    "TerminalTaskError",
    "WebhookLimitError",
]


class StoreError(Exception):
    """Base of the store's errors."""


class StoreFullError(StoreError):
    """The store is at its cap and nothing in it may be evicted."""


class StoreUnavailableError(StoreError):
    """The store can't be reached, or lost its connection or its answer timed
    out: a passing fault, the call may be made again. ``task_id``: the task the
    call was about ("" for none). ``maybe_stored``: a write whose commit was
    under way when the connection went, so it may or may not have been stored;
    otherwise a write stored nothing."""

    def __init__(self, message: str, *, task_id: str = "", maybe_stored: bool = False) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.maybe_stored = maybe_stored


class DuplicateMessageError(StoreError):
    """The message's key is already recorded, with the task ``task_id``: the
    same message was sent again, and another process stored it first."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"the message is already recorded with task {task_id}")
        self.task_id = task_id


class MissingTaskError(StoreError, KeyError):
    """No task with this id."""


class SequenceConflictError(StoreError):
    """Another writer appended first; re-read and try again."""


class TerminalTaskError(StoreError):
    """The task is terminal; it takes no more events."""

    def __init__(self, task_id: str, state: TaskState) -> None:
        super().__init__(f"task {task_id} is already {state.word}")
        self.state = state


class EventLimitError(StoreError):
    """The event would take the task past a size bound."""


class WebhookLimitError(StoreError):
    """The task already has MAX_WEBHOOKS push-notification configs."""


class MissingCapabilityError(StoreError, TypeError):
    """A create or append asked for an optional capability the store does not
    implement (``usage`` of a store without ``Usage``, ``turn`` of one without
    ``Turns``): nothing is stored, rather than the request silently dropped."""

    def __init__(self, store: object, capability: str, what: str) -> None:
        super().__init__(f"{store!r} does not implement {capability}: it can't store {what}")
        self.capability = capability
