"""The task lifecycle engine.

Concurrency in one paragraph: there is one writer (``writer.py``), the only code
that writes tasks to the store and publishes on the bus; it checks each batch of
events against the lifecycle (``lifecycle.py``), appends it atomically with
compare-and-set on the task's sequence number, and publishes only what was
stored, each event with its snapshot. Each agent turn is an ``Invocation``
(``invocation.py``), owned by the ``Runner`` that cancels and awaits it: a
producer (the agent, whose ``TaskContext`` puts events in a bounded outbox) and
a consumer (the outbox's drains, one at a time, each handing the writer all that
is queued) in one task group. A turn-ending event waits for its own
acknowledgement, draining in the agent's task when no drain is under way, so
``complete()`` says whether it was stored. A request learns its answer from the
invocation's futures (``head``, ``outcome``), never from the bus. A cancel or a
deadline is an event like any other: the engine stores it after the agent's
queued events, then interrupts the agent (here, or through the bus's cancel
signal wherever it runs); whatever the agent emits afterwards is dropped.
Publishing never awaits a subscriber: each has a bounded buffer and is dropped
when it is full (``bus.py``). With the memory store nothing on this path awaits I/O.
"""

from .bus import Bus, LocalBus
from .engine import AgentStartError, Engine, task_view
from .streams import EventStream

__all__ = ["AgentStartError", "Bus", "Engine", "EventStream", "LocalBus", "task_view"]
