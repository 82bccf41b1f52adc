"""What an LLM agent remembers of a conversation between its tasks: the chat
messages of each turn, by the caller and the ``contextId``, in this process.

A follow-up task in the same context is sent the earlier turns before its own
message; another caller's task with the same ``contextId`` sees none of them
(the key holds the caller's principal and the task's tenant, as tasks belong
to their caller and tenant: docs/protocol.md, "Whose tasks a caller reaches"). Bounded twice: the
last ``max_turns`` turns of a context are kept (whole turns, so that a tool
result never loses the call it answers), and the ``max_contexts`` contexts used
last; the least recently used is forgotten first. Nothing is stored: a restart
forgets, and servers sharing a store do not share it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..agent import TaskContext

__all__ = ["ConversationMemory"]

Messages = list[dict[str, Any]]
Key = tuple[str, str, str]


class ConversationMemory:
    def __init__(self, *, max_turns: int = 20, max_contexts: int = 1000) -> None:
        if max_turns < 0 or max_contexts < 1:
            raise ValueError(
                f"max_turns must be 0 or more and max_contexts 1 or more, not {max_turns} "
                f"and {max_contexts}"
            )
        self.max_turns = max_turns
        self.max_contexts = max_contexts
        self._turns: OrderedDict[Key, list[Messages]] = OrderedDict()

    @staticmethod
    def key(ctx: TaskContext) -> Key:
        return (ctx.request.caller.principal, ctx.tenant, ctx.context_id)

    def recall(self, ctx: TaskContext) -> Messages:
        """The messages of the earlier turns of ``ctx``'s conversation, oldest first."""
        turns = self._turns.get(self.key(ctx))
        if turns is None:
            return []
        self._turns.move_to_end(self.key(ctx))
        return [message for turn in turns for message in turn]

    def remember(self, ctx: TaskContext, turn: Messages) -> None:
        """Keep one turn's messages (the user's, the model's, the tools')."""
        if self.max_turns == 0:
            return
        key = self.key(ctx)
        turns = self._turns.setdefault(key, [])
        self._turns.move_to_end(key)
        turns.append(turn)
        del turns[: -self.max_turns]
        while len(self._turns) > self.max_contexts:
            self._turns.popitem(last=False)

    def __len__(self) -> int:
        return len(self._turns)
