"""``a2ad serve``'s authentication flags, read into the server's authenticator."""

from __future__ import annotations

from typing import Any

from ..server.auth import ApiKeys, CredentialAuthenticator, JwtVerifier

__all__ = ["authenticator_from_flags"]


def authenticator_from_flags(flags: dict[str, Any]) -> CredentialAuthenticator | None:
    """The authenticator ``--auth`` and the ``--auth-jwt-*`` flags ask for, or
    None (auth off). Raises ValueError (a usage error) for flags that don't fit
    or a file that is wrong."""
    jwks = flags["auth_jwt_jwks"]
    issuer, audience = flags["auth_jwt_issuer"], flags["auth_jwt_audience"]
    oidc_url, prefix = flags["auth_jwt_oidc_url"], flags["auth_jwt_principal_prefix"]
    if jwks is None and (issuer or audience or oidc_url or prefix is not None):
        raise ValueError(
            "--auth-jwt-issuer/--auth-jwt-audience/--auth-jwt-oidc-url/"
            "--auth-jwt-principal-prefix need --auth-jwt-jwks URL|FILE"
        )
    keys = ApiKeys.load(flags["auth"]) if flags["auth"] else None
    verifier = None
    if jwks is not None:
        verifier = JwtVerifier(
            jwks,
            issuer=issuer or "",
            audience=audience or "",
            principal_claim=flags["auth_jwt_principal_claim"],
            tenant_claim=flags["auth_jwt_tenant_claim"],
            roles_claim=flags["auth_jwt_roles_claim"],
            openid_config_url=oidc_url or "",
            principal_prefix=prefix,
        )
    if keys is None and verifier is None:
        return None
    return CredentialAuthenticator(keys=keys, jwt=verifier)
