"""How the controller and the backtest authenticate to Prometheus: a bearer token read from a file, a CA
bundle for its TLS certificate, and fixed headers (a tenant, for Thanos, Cortex or Mimir).

Managed and multi-tenant Prometheus setups rarely answer anonymous queries: OpenShift's thanos-querier
wants the ServiceAccount's bearer token and serves a certificate signed by the cluster's service CA;
Grafana Mimir and Cortex want an `X-Scope-OrgID` tenant header; a Prometheus behind an authenticating proxy
wants a token. The token is a file, never a flag value (a flag shows in `ps` and in the pod spec), and it
is read again before each request, so a projected ServiceAccount token the kubelet rotates is picked up
without a restart; the CA bundle is read again when its file changes (`PrometheusAPI`), so is a rotated
CA. One setting applies to every Prometheus the controller queries (`--prometheus-url` and
the allow-listed URLs), which the operator configured, never to a URL a policy brings.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

# A token is at most a few kilobytes (a ServiceAccount JWT is ~1 KiB); a file far larger is a mistake.
MAX_TOKEN_BYTES = 16 << 10
# An HTTP header name is a token (RFC 9110, section 5.1); a value is visible ASCII and spaces, no CR/LF.
_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
_VALUE = re.compile(r"[\x20-\x7e]{0,4096}")
# Headers the client itself sets or that the token sets: naming them in `headers` would fight them.
_RESERVED = frozenset({"authorization", "accept-encoding", "content-length", "content-type", "host",
                       "transfer-encoding", "connection"})


class AuthError(ValueError):
    """A Prometheus auth setting that cannot be used: one line naming the setting and the fix."""


@dataclass(frozen=True, slots=True)
class PromAuth:
    bearer_token_file: Path | None = None
    ca_file: Path | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def from_settings(bearer_token_file: str | None = None, ca_file: str | None = None,
                      headers: Iterable[str] = ()) -> PromAuth:
        """From the command line's spelling (`headers` as `Name: value`), checked: every file readable now,
        the CA bundle a certificate store, every header well-formed."""
        auth = PromAuth(Path(bearer_token_file) if bearer_token_file else None,
                        Path(ca_file) if ca_file else None,
                        tuple(parse_header(h) for h in headers))
        if auth.bearer_token_file is not None:
            auth.token()
        auth.verify()
        return auth

    def token(self) -> str | None:
        """The bearer token as the file holds it now (surrounding whitespace stripped)."""
        if self.bearer_token_file is None:
            return None
        where = f"--prometheus-bearer-token-file {self.bearer_token_file}"
        try:
            with self.bearer_token_file.open("rb") as f:
                raw = f.read(MAX_TOKEN_BYTES + 1)
        except OSError as e:
            raise AuthError(f"{where}: cannot read it ({e.strerror or e}); point it at the token file, e.g. "
                            "/var/run/secrets/kubernetes.io/serviceaccount/token") from None
        if len(raw) > MAX_TOKEN_BYTES:
            raise AuthError(f"{where}: over {MAX_TOKEN_BYTES} bytes; a token file holds one token")
        token = raw.decode("ascii", "replace").strip()
        if not token or not _VALUE.fullmatch(token):
            raise AuthError(f"{where}: empty, or not one line of visible ASCII; a token file holds one token")
        return token

    def request_headers(self) -> dict[str, str]:
        """The headers for one request: the fixed ones, and the token as it is now."""
        out = dict(self.headers)
        token = self.token()
        if token is not None:
            out["Authorization"] = f"Bearer {token}"
        return out

    def verify(self) -> ssl.SSLContext | bool:
        """What the HTTP client verifies the server's certificate against: the CA bundle, else the system's."""
        if self.ca_file is None:
            return True
        try:
            return ssl.create_default_context(cafile=str(self.ca_file))
        except (OSError, ssl.SSLError) as e:
            raise AuthError(f"--prometheus-ca-file {self.ca_file}: not a readable PEM certificate bundle "
                            f"({getattr(e, 'strerror', None) or e})") from None

    @property
    def configured(self) -> bool:
        return self != PromAuth()

    def describe(self) -> Mapping[str, str]:
        """What is configured, without the token, for the startup log."""
        return {"bearer_token_file": str(self.bearer_token_file or ""), "ca_file": str(self.ca_file or ""),
                "headers": ", ".join(name for name, _ in self.headers)}


def parse_header(raw: str) -> tuple[str, str]:
    """`Name: value` → (name, value), refused in one line when it is not a header a client may set."""
    name, sep, value = raw.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not _NAME.fullmatch(name):
        raise AuthError(f"--prometheus-header {raw[:80]!r}: give 'Name: value', e.g. 'X-Scope-OrgID: team-a'")
    if name.lower() in _RESERVED:
        raise AuthError(f"--prometheus-header {name}: set by the client itself"
                        + ("; use --prometheus-bearer-token-file for a token" if name.lower() == "authorization"
                           else ""))
    if not _VALUE.fullmatch(value):
        raise AuthError(f"--prometheus-header {name}: the value must be visible ASCII on one line, "
                        "at most 4096 characters")
    return name, value
