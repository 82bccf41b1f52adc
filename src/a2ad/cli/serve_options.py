"""``a2ad serve``'s options: each flag's type, help and panel, one alias each.

serve.py's signature names them (``host: opt.Host = "127.0.0.1"``), so that the
command reads as the list of its flags and their defaults; typer reads the
help from here. A flag's name, environment variable and config key come from
its parameter's name (cli/config.py), not from here.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..protocol.model import MAX_PARTS
from ..store.base import MAX_ARTIFACTS, MAX_HISTORY
from ..store.memory import DEFAULT_MAX_TASKS
from .auth import ENV_AUTH_FILE
from .config import DURATION, ENV_AGENTS

Host = Annotated[str, typer.Option(help="Address to listen on.")]

Port = Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")]

Store = Annotated[
    str,
    typer.Option(
        help="Where tasks are kept: sqlite:///file.db (relative; sqlite:////abs/path.db), "
        "memory, or postgresql://user@host:5432/db (shared by instances; query parameters "
        "such as pool_max, connect_timeout, command_timeout, statement_timeout, sslmode, "
        "application_name: docs/operations.md)."
    ),
]

Agent = Annotated[
    list[str] | None,
    typer.Option(
        envvar=ENV_AGENTS,
        help="'echo', 'demo', package.module:attr of your agent, exec:COMMAND (a command run "
        "for each message), or a2a+http://HOST:PORT/ (an A2A agent served elsewhere): "
        "docs/agents.md. Repeat as NAME=SPEC to serve several, each at /agents/NAME/ (the "
        "first, or --default-agent, at / too).",
    ),
]

DefaultAgent = Annotated[
    str | None,
    typer.Option(help="Of several --agent NAME=SPEC, the one also served at /."),
]

MaxTasks = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Most tasks the store keeps; the oldest finished go first. "
        f"Default: {DEFAULT_MAX_TASKS} in memory, no cap in SQLite.",
    ),
]

ShutdownGrace = Annotated[
    str,
    typer.Option(
        metavar=DURATION,
        help="On Ctrl-C/SIGTERM, how long running tasks may finish before they are failed.",
    ),
]

Retention = Annotated[
    str,
    typer.Option(
        metavar=DURATION,
        help="Delete finished tasks this long after their last update (e.g. 7d); off keeps them.",
    ),
]

TaskTimeout = Annotated[
    str,
    typer.Option(
        metavar=DURATION,
        help="Fail tasks not finished this long after they were created (e.g. 15m).",
    ),
]

StallTimeout = Annotated[
    str,
    typer.Option(
        metavar=DURATION,
        help="Fail a turn whose agent (local, a command, or one served elsewhere) sends "
        "nothing for this long (e.g. 2m); off: no bound but the task's deadline.",
    ),
]

LeaseSeconds = Annotated[
    float,
    typer.Option(
        min=0.5,
        help="Tasks of a server that died (no heartbeat for this long) are failed.",
    ),
]

NoRun = Annotated[
    bool,
    typer.Option(
        "--no-run",
        help="Run no agents here: store each task for `a2ad worker` processes to run "
        "(PostgreSQL store only); this server serves the requests.",
    ),
]

NoWorkerWait = Annotated[
    str,
    typer.Option(
        metavar=DURATION,
        help="With --no-run: a blocking send whose agent has had no live worker for this "
        "long stops waiting, answered NO_WORKER (its task stays queued).",
    ),
]

MaxConnections = Annotated[
    int,
    typer.Option(
        min=1,
        help="Most client connections served at once; more are answered 503. "
        "Lowered if the file-descriptor limit can't hold them.",
    ),
]

MaxHeaderBytes = Annotated[
    int,
    typer.Option(min=1, help="Largest request line and headers, in bytes; larger ones get 431."),
]

HeaderTimeout = Annotated[
    str,
    typer.Option(
        metavar=DURATION, help="A request's headers must arrive within this (408 otherwise)."
    ),
]

BodyTimeout = Annotated[
    str,
    typer.Option(
        metavar=DURATION,
        help="A request's body must arrive within this of its headers (408 otherwise).",
    ),
]

MaxBodyBytes = Annotated[
    int,
    typer.Option(
        min=1,
        help="Largest request body, in bytes; a larger one gets 413.",
        rich_help_panel="Limits",
    ),
]

MaxParts = Annotated[
    int,
    typer.Option(
        min=1,
        max=MAX_PARTS,
        help="Most parts in a message (-32602 past it).",
        rich_help_panel="Limits",
    ),
]

MaxPartBytes = Annotated[
    int,
    typer.Option(
        min=1,
        help="Largest part of a message, in bytes: a text's UTF-8, a data part's JSON, "
        "a file's raw bytes (-32602 past it).",
        rich_help_panel="Limits",
    ),
]

MaxHistory = Annotated[
    int,
    typer.Option(
        min=1,
        max=MAX_HISTORY,
        help="Messages a task keeps; past it the oldest are dropped, and counted in "
        'its metadata["a2ad"]["historyDropped"].',
        rich_help_panel="Limits",
    ),
]

MaxArtifacts = Annotated[
    int,
    typer.Option(
        min=1,
        max=MAX_ARTIFACTS,
        help="Artifacts a task keeps; an agent's artifact past it is dropped and logged.",
        rich_help_panel="Limits",
    ),
]

MaxTasksPerPrincipal = Annotated[
    int,
    typer.Option(
        min=0,
        help="Tasks a caller may have submitted/working at once; more get 429 (0: no limit).",
        rich_help_panel="Limits",
    ),
]

MaxStreamsPerPrincipal = Annotated[
    int,
    typer.Option(
        min=0,
        help="Streams a caller may have open at once; more get 429 (0: no limit).",
        rich_help_panel="Limits",
    ),
]

RateLimit = Annotated[
    float,
    typer.Option(
        min=0,
        help="Requests a second per caller (its principal, or its address without auth); "
        "more get 429 with Retry-After (0: no limit).",
        rich_help_panel="Limits",
    ),
]

RateBurst = Annotated[
    int,
    typer.Option(
        min=0,
        help="Requests a caller may send at once within --rate-limit (0: the rate, rounded up).",
        rich_help_panel="Limits",
    ),
]

AllowPrivateWebhooks = Annotated[
    bool,
    typer.Option(
        "--allow-private-webhooks",
        help="Deliver push notifications to webhooks on loopback, private or link-local "
        "addresses too (refused by default, against server-side request forgery).",
    ),
]

ExposeInternalParts = Annotated[
    bool,
    typer.Option(
        "--expose-internal-parts",
        help="Show every caller and webhook the parts agents mark internal (tool calls, "
        "tool results, reasoning); by default only operators see them.",
    ),
]

SecretKeyFile = Annotated[
    str | None,
    typer.Option(
        envvar="A2AD_SECRET_KEY_FILE",
        help="The 32-byte key webhook tokens and credentials are stored encrypted with; "
        "made if missing. Default: <store file>-a2ad.key beside a SQLite store, a random "
        "key for memory.",
    ),
]

Auth = Annotated[
    str | None,
    typer.Option(
        envvar=ENV_AUTH_FILE,
        help="Turn auth on with this keys file (TOML; `a2ad auth add-key` writes it): "
        "requests need 'Authorization: Bearer KEY' or 'X-API-Key: KEY'.",
        rich_help_panel="Authentication",
    ),
]

AuthJwtJwks = Annotated[
    str | None,
    typer.Option(
        help="Accept bearer JWTs signed by the keys of this JWKS (URL or file); "
        "needs --auth-jwt-issuer and --auth-jwt-audience.",
        rich_help_panel="Authentication",
    ),
]

AuthJwtIssuer = Annotated[
    str | None,
    typer.Option(help="The JWTs' required `iss`.", rich_help_panel="Authentication"),
]

AuthJwtAudience = Annotated[
    str | None,
    typer.Option(help="The JWTs' required `aud`.", rich_help_panel="Authentication"),
]

AuthJwtPrincipalClaim = Annotated[
    str,
    typer.Option(
        help="The claim naming the caller (dots walk nested claims).",
        rich_help_panel="Authentication",
    ),
]

AuthJwtPrincipalPrefix = Annotated[
    str | None,
    typer.Option(
        help="What goes before that claim to make the principal. Default: the issuer and "
        "'#', so a JWT is never a key's principal; '' maps its subject to the key's of "
        "that name.",
        rich_help_panel="Authentication",
    ),
]

AuthJwtTenantClaim = Annotated[
    str,
    typer.Option(
        help="The claim listing its tenants (a string or a list).",
        rich_help_panel="Authentication",
    ),
]

AuthJwtRolesClaim = Annotated[
    str,
    typer.Option(
        help="The claim listing its roles (a list or a space-separated string).",
        rich_help_panel="Authentication",
    ),
]

AuthJwtOidcUrl = Annotated[
    str | None,
    typer.Option(
        help="The provider's OpenID Connect discovery URL, for the card to declare "
        "(otherwise it declares an HTTP bearer scheme of format JWT).",
        rich_help_panel="Authentication",
    ),
]

Workers = Annotated[
    int,
    typer.Option(
        min=1,
        help="Processes serving the port together, each with its own engine; one that "
        "dies is started again. Needs a SQLite or PostgreSQL store.",
    ),
]

Dashboard = Annotated[
    bool,
    typer.Option(
        "--dashboard/--no-dashboard",
        help="Serve the task dashboard (a page for people: list, follow, cancel tasks).",
    ),
]

DashboardPath = Annotated[
    str, typer.Option(help="Where the dashboard is served (a path such as /ui).")
]

LogLevel = Annotated[str, typer.Option(help="debug, info, warning or error.")]

LogFormat = Annotated[
    str,
    typer.Option(
        help="json: one JSON object a line, for machines; text: one line of text an "
        "event, for people at a terminal (coloured there, unless NO_COLOR is set)."
    ),
]

AccessLog = Annotated[
    str,
    typer.Option(
        help="A line per request on the a2ad.access logger: on (every request), errors "
        "(those answered with an error), off, or a fraction (0 to 1) of the requests "
        "answered without an error to log beside those with one."
    ),
]

Tracing = Annotated[
    str,
    typer.Option(
        help="OpenTelemetry spans for requests, agent turns and the calls agents make "
        "through a2ad's client: off, otlp (OTLP over HTTP, configured by the standard "
        "OTEL_EXPORTER_OTLP_* variables) or console. Needs pip install 'a2ad[otel]'."
    ),
]

Metrics = Annotated[
    bool,
    typer.Option(
        help="Serve GET /metrics (Prometheus text format; with auth on, for operators) and "
        "count what it reports; --no-metrics: neither (/metrics is then a 404).",
    ),
]

MetricsPort = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=65535,
        help="Serve /metrics on this port (same --host) instead of the main one, open to "
        "anyone who reaches it: bind it where only Prometheus does.",
    ),
]

UpstreamAuth = Annotated[
    str | None,
    typer.Option(
        help="Credentials for the agents served elsewhere (--agent NAME=a2a+http://...): "
        "a TOML table per NAME with token, api-key (and api-key-header) or [NAME.oauth2] "
        "client credentials; A2AD_AGENT_<NAME>_TOKEN or _API_KEY win over it.",
    ),
]

Model = Annotated[
    str | None,
    typer.Option(
        help="The LLM an LLM-backed agent uses (the task manager, the LLM agent; the lab's "
        "agents word their answers with it), instead of A2AD_MODEL. "
        "The endpoint comes from OPENAI_BASE_URL and OPENAI_API_KEY."
    ),
]

GrpcPort = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=65535,
        help="Also serve A2A 1.0's gRPC binding (lf.a2a.v1.A2AService) on this port, same "
        "--host, for the same agents and tasks (0: any free port). Needs a2ad[grpc].",
        rich_help_panel="gRPC",
    ),
]

GrpcTlsCert = Annotated[
    str | None,
    typer.Option(
        help="With --grpc-port: serve gRPC over TLS with this PEM certificate chain "
        "(and --grpc-tls-key); plaintext (h2c) without.",
        rich_help_panel="gRPC",
    ),
]

GrpcTlsKey = Annotated[
    str | None,
    typer.Option(
        help="The PEM private key of --grpc-tls-cert.",
        rich_help_panel="gRPC",
    ),
]

GrpcPublicAddress = Annotated[
    str | None,
    typer.Option(
        help="The HOST:PORT the agent cards give for gRPC (a proxy's, a load balancer's) "
        "instead of the host the card was fetched by and --grpc-port.",
        rich_help_panel="gRPC",
    ),
]

GrpcErrorTable = Annotated[
    str,
    typer.Option(
        help="Which of the spec's tables gives A2A errors their gRPC status: 1.0.1 "
        "(FAILED_PRECONDITION for VersionNotSupported, UnsupportedOperation, "
        "PushNotificationNotSupported) or 1.0.0 (UNIMPLEMENTED for those three).",
        rich_help_panel="gRPC",
    ),
]
