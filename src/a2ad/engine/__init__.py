"""The task lifecycle engine.

Concurrency in one paragraph: every change to a task goes through
``Engine._apply``, which validates the event against the lifecycle, appends it
to the store with compare-and-set on the task's sequence number, and then
publishes it on the bus. Each running agent invocation is one asyncio task owned
by the Runner (cancelled and awaited on cancel or shutdown). Publishing never
awaits a subscriber: each has a bounded buffer and is dropped when it is full.
With the memory store nothing on this path awaits I/O.
"""

from .engine import Engine, EventStream, task_view

__all__ = ["Engine", "EventStream", "task_view"]
