"""The HTTP side: the ASGI app, JSON-RPC dispatch, SSE, the agent card."""
