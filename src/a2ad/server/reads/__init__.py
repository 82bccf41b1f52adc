"""a2ad's own reads beside A2A's, for the dashboard and for operators
(docs/dashboard.md, docs/protocol.md "Token usage"): ``activity.py`` (what the
caller's tasks did lately, for the dashboard's charts), ``changes.py`` (an SSE
stream of the caller's tasks as they change), ``timeline.py`` (a task's status
changes) and ``usage.py`` (the token usage report, also the JSON-RPC method
``a2ad/GetUsage``). They answer errors as the HTTP+JSON binding does
(``server/errors.py``).
"""
