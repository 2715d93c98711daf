"""Comparing Prometheus URLs for the allow-list: one spelling per address.

`HTTP://Prom:9090/` and `http://prom:9090` are the same Prometheus; `http://prom:9090@evil/` is not.
Scheme and host are lower-cased, a default port is dropped, trailing slashes of the path are removed;
user info, query and fragment stay part of the URL, so they must match exactly.
"""

from __future__ import annotations

from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """The canonical form of `url` for comparisons; the input stripped when it does not parse."""
    raw = url.strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        return raw
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    if parts.username is not None or parts.password is not None:
        netloc = parts.netloc.rsplit("@", 1)[0] + "@" + netloc
    out = f"{scheme}://{netloc}{parts.path.rstrip('/')}"
    if parts.query:
        out += "?" + parts.query
    if parts.fragment:
        out += "#" + parts.fragment
    return out
