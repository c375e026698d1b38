"""What makes two endpoint URLs the same target, and the `instance` each endpoint is named by.

An endpoint's identity is its normalised target: the scheme and host in lower case, the
port always spelled out (80 for http, 443 for https), IP literals in their compressed
form, and the path with dot segments resolved, duplicate slashes collapsed and a trailing
slash dropped (a bare host is `/`). The query string is kept as written; a fragment or
user information never reaches a request and is not part of it. `HTTP://127.0.0.1/metrics`,
`http://127.0.0.1:80//metrics/` and `http://127.0.0.1/./metrics` are one target:
registration refuses the second spelling (see `inventory.registration`).

Nothing here touches the database, so the migration that backfilled the identities uses
the same functions as registration.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")


def _path_normalised(path: str) -> str:
    """Dot segments resolved (RFC 3986, 5.2.4), duplicate and trailing slashes dropped."""
    path = _ESCAPE.sub(lambda m: m.group(0).upper(), path)
    kept: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if kept:
                kept.pop()
            continue
        kept.append(segment)
    return "/" + "/".join(kept)


def _host_normalised(host: str) -> str:
    host = host.lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def normalised_target(url: str) -> str:
    """The target `url` names, spelled one way: `scheme://host:port/path[?query]`.

    A URL that cannot be parsed is returned as it is (the outbound policy refuses it
    before it could be registered)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    host = _host_normalised(parts.hostname or "")
    if port is None:
        port = DEFAULT_PORTS.get(scheme)
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    path = _path_normalised(parts.path)
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{netloc}{path}{query}"


def instance_candidates(target: str) -> tuple[str, str, str]:
    """The names an endpoint of this (normalised) target may take as its `instance`, in
    order of preference: `host:port` as Prometheus names a target; `host:port/path` when
    another endpoint of the fleet already holds that; the whole target, which is unique
    in its fleet, when even that is taken (the same host, port and path over http and
    https)."""
    parts = urlsplit(target)
    hostport = parts.netloc
    rest = parts.path + (f"?{parts.query}" if parts.query else "")
    return hostport, f"{hostport}{rest}", target
