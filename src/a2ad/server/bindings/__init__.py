"""The bindings: how a request reaches the server over each A2A transport.

``jsonrpc.py`` (JSON-RPC 2.0, both versions) and ``rest.py`` (HTTP+JSON: 1.0 at
the spec's paths, 0.3 under ``/v1/``; ``rest_params.py`` turns a path, query
and body into params) are ASGI adapters over ``skeleton.py``, which serves every
request the same way once its binding has read it into the transport-neutral
``A2ARequest`` (server/request.py) for ``server/dispatch.py``; ``sse.py`` writes
a streaming answer as server-sent events for both.
"""
