"""Which addresses FleetScope may send a scrape to: the SSRF defence.

Two checks, both needed. `OutboundPolicy.check_url` runs when an endpoint is
registered: it rejects URLs that are malformed or ambiguous and hosts that are
denied by name or by literal address. `check_address` (or `resolve_and_check`,
which resolves first) runs at connect time on every address a name resolves
to, so a name that later re-resolves somewhere forbidden (DNS rebinding) is
still refused; the scraper then connects to the address it checked.

Address rules, in order:

1. IPv6 forms that embed an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`,
   IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are
   judged as that IPv4 address. Teredo (`2001::/32`) and the local-use NAT64
   prefix `64:ff9b:1::/48` are refused outright.
2. Always refused, whatever the allow-list says: cloud metadata addresses,
   link-local, `0.0.0.0/8`, `::`, multicast, broadcast and reserved space.
3. Loopback (`127.0.0.0/8`, `::1`) only when `allow_loopback` is set.
4. Anything else only if an allow-list network contains it, or (connect time)
   if the host name itself is allow-listed. Private space (RFC 1918,
   `100.64.0.0/10` CGNAT, `fc00::/7`, ...) and public addresses alike are
   refused otherwise, with a reason that says which.

Numeric host spellings other than canonical dotted decimal (`127.1`,
`0x7f000001`, `2130706433`, `017700000001`, `0177.0.0.1`) are refused rather
than normalised: resolvers, URL parsers and `inet_aton` disagree on them, and
that disagreement is what SSRF filters get bypassed through. Hosts must be
ASCII; internationalised names are accepted in their punycode (`xn--`) form
only, and only when every label is valid IDNA 2008 written in one script.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import idna

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[..., Iterable[Sequence[Any]]]

MAX_URL_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}

_DENIED_NAMES = {
    "metadata.google.internal": "cloud metadata host name",
    "metadata.goog": "cloud metadata host name",
    "metadata": "cloud metadata host name",
    "instance-data": "cloud metadata host name",
    "instance-data.ec2.internal": "cloud metadata host name",
}
_LOOPBACK_NAMES = ("localhost", ".localhost")


def _networks(*specs: tuple[str, str]) -> tuple[tuple[Network, str], ...]:
    return tuple((ipaddress.ip_network(cidr), reason) for cidr, reason in specs)


# Most specific first: the first match names the reason.
_ALWAYS_DENIED = _networks(
    ("169.254.169.254/32", "cloud metadata address"),
    ("fd00:ec2::254/128", "cloud metadata address"),
    ("100.100.100.200/32", "cloud metadata address"),
    ("168.63.129.16/32", "cloud platform endpoint"),
    ("169.254.0.0/16", "link-local address"),
    ("fe80::/10", "link-local address"),
    ("fec0::/10", "site-local address"),
    ("0.0.0.0/8", "'this network' address"),
    ("::/128", "unspecified address"),
    ("224.0.0.0/4", "multicast address"),
    ("ff00::/8", "multicast address"),
    ("255.255.255.255/32", "broadcast address"),
    ("240.0.0.0/4", "reserved address"),
    ("2001::/32", "Teredo tunnel address"),
    ("64:ff9b:1::/48", "local-use NAT64 address"),
    ("100::/64", "discard-only address"),
)
_LOOPBACK = _networks(("127.0.0.0/8", "loopback"), ("::1/128", "loopback"))
_PRIVATE = _networks(
    ("10.0.0.0/8", "private address (RFC 1918)"),
    ("172.16.0.0/12", "private address (RFC 1918)"),
    ("192.168.0.0/16", "private address (RFC 1918)"),
    ("100.64.0.0/10", "shared address space (CGNAT)"),
    ("fc00::/7", "unique local address"),
    ("192.0.0.0/24", "IETF protocol address"),
    ("192.0.2.0/24", "documentation address"),
    ("198.51.100.0/24", "documentation address"),
    ("203.0.113.0/24", "documentation address"),
    ("198.18.0.0/15", "benchmarking address"),
    ("2001:db8::/32", "documentation address"),
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

_label_match = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)").fullmatch
# The WHATWG URL parser treats a host whose last label is a number as IPv4.
_numeric_label_match = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)").fullmatch
_canonical_ipv4_match = re.compile(
    r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
).fullmatch


# What `BlockedByPolicy.allowed_by` names: the OutboundPolicy argument that would let the
# target through. Nothing can (None) for metadata, link-local and malformed targets.
ALLOWED_BY_LOOPBACK = "allow_loopback"
ALLOWED_BY_ALLOW_LIST = "allow"


class BlockedByPolicy(Exception):
    """The target is not allowed; `reason` says why in one short phrase, `allowed_by` which
    policy argument would allow it (ALLOWED_BY_LOOPBACK, ALLOWED_BY_ALLOW_LIST) or None."""

    def __init__(self, reason: str, *, allowed_by: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.allowed_by = allowed_by


# The setting behind each of those arguments (inventory.services.outbound_policy reads
# them), so that every refusal tells the operator what would let the target through.
POLICY_SETTING_HINTS = {
    ALLOWED_BY_LOOPBACK: "set FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=true to allow it",
    ALLOWED_BY_ALLOW_LIST: "add it to FLEETSCOPE_OUTBOUND_ALLOW to allow it",
}


def policy_refusal(exc: BlockedByPolicy) -> str:
    """`blocked by policy: <reason>`, naming the setting that would allow it when one would."""
    hint = POLICY_SETTING_HINTS.get(exc.allowed_by or "")
    return f"blocked by policy: {exc.reason}" + (f" ({hint})" if hint else "")


@dataclass(frozen=True, slots=True)
class ParsedTarget:
    """A registration-time-valid URL, normalised."""

    scheme: str
    host: str  # lowercase ASCII name without a trailing dot, or a compressed IP literal
    port: int
    path: str  # path and query, at least "/"
    ip: IPAddress | None  # set when the host is an IP literal

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.path}"


class OutboundPolicy:
    """The allow-list of one deployment plus the rules no allow-list can override.

    `allow` holds CIDRs or single addresses (`10.0.0.0/8`, `fd12::/48`,
    `203.0.113.7`) and host names: exact (`vllm-0.prod.example`) or a suffix
    (`.svc.cluster.local` or `*.svc.cluster.local`, which also match the bare
    suffix). `ports`, when given, limits the ports a URL may name.
    """

    def __init__(
        self,
        allow: Sequence[str] = (),
        allow_loopback: bool = False,
        *,
        ports: Iterable[int] | None = None,
    ) -> None:
        if isinstance(allow, str):
            raise TypeError("allow must be a sequence of entries, not one string")
        self.allow_loopback = allow_loopback
        self.ports = None if ports is None else frozenset(ports)
        networks: list[Network] = []
        names: set[str] = set()
        suffixes: list[str] = []
        for entry in allow:
            value = _allow_entry(entry)
            if not isinstance(value, str):
                networks.append(value)
            elif value.startswith("."):
                suffixes.append(value)
            else:
                names.add(value)
        self.networks = tuple(networks)
        self.names = frozenset(names)
        self.suffixes = tuple(suffixes)

    def check_url(self, url: str) -> ParsedTarget:
        """Validate a URL for registration; raise BlockedByPolicy with the reason."""
        if not isinstance(url, str):
            raise BlockedByPolicy("URL must be text")
        if len(url) > MAX_URL_LENGTH:
            raise BlockedByPolicy(f"URL longer than {MAX_URL_LENGTH} characters")
        if not url.isascii():
            raise BlockedByPolicy("URL must be ASCII (use punycode for host names)")
        if any(c <= " " or c == "\x7f" for c in url):
            raise BlockedByPolicy("URL contains whitespace or control characters")
        if "\\" in url:
            raise BlockedByPolicy("URL contains a backslash")
        if "#" in url:
            raise BlockedByPolicy("URL has a fragment")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise BlockedByPolicy("URL is malformed (bad host or port)") from None
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            raise BlockedByPolicy(
                f"scheme {scheme or '(none)'!r} is not allowed: use http or https"
            )
        if not parts.netloc:
            raise BlockedByPolicy("URL has no host")
        if "@" in parts.netloc:
            raise BlockedByPolicy("URL has user information (user:password@)")
        if port is None and parts.netloc.endswith(":"):
            raise BlockedByPolicy("URL has an empty port")
        if port == 0:
            raise BlockedByPolicy("port 0 is not allowed")
        port = port or DEFAULT_PORTS[scheme]
        if self.ports is not None and port not in self.ports:
            raise BlockedByPolicy(f"port {port} is not in the allowed ports")
        bracketed = parts.netloc.startswith("[")
        host = self._check_host(parts.hostname or "", bracketed=bracketed)
        path = parts.path or "/"
        if parts.query:
            path = f"{path}?{parts.query}"
        ip = ipaddress.ip_address(host) if _is_ip(host) else None
        return ParsedTarget(scheme=scheme, host=host, port=port, path=path, ip=ip)

    def check_literal(self, host: str) -> str | None:
        """For a host that is an IP literal, check it and return it normalised.

        A host name is checked by name only and gives None: resolve it and pass
        every address to check_address (or use resolve_and_check).
        """
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        host = self._check_host(host, bracketed=":" in host)
        return host if _is_ip(host) else None

    def check_address(self, address: str | IPAddress, host: str | None = None) -> None:
        """Check one resolved address at connect time; raise BlockedByPolicy if refused.

        `host`, the name that resolved to it, lets an allow-listed name reach
        private addresses; without it only the address networks count.
        """
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            raise BlockedByPolicy("not an IP address") from None
        self._check_ip(ip, name_allowed=host is not None and self._name_allowed(_norm(host)))

    def resolve_and_check(
        self, host: str, port: int, resolver: Resolver = socket.getaddrinfo
    ) -> list[str]:
        """Resolve `host` and check every address; return them for the connection.

        Fails closed: a resolver error, an empty answer or any refused address
        raises BlockedByPolicy.
        """
        literal = self.check_literal(host)
        if literal is not None:
            return [literal]
        name = _norm(host)
        try:
            answers = list(resolver(name, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError, ValueError):
            raise BlockedByPolicy(f"cannot resolve host {name!r}") from None
        addresses: list[str] = []
        for answer in answers:
            try:
                address = str(answer[4][0])
            except (IndexError, TypeError):
                raise BlockedByPolicy("resolver returned a malformed answer") from None
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise BlockedByPolicy(f"host {name!r} has no addresses")
        allowed_by_name = self._name_allowed(name)
        for address in addresses:
            try:
                ip = ipaddress.ip_address(address.split("%", 1)[0])
            except ValueError:
                raise BlockedByPolicy(
                    "resolver returned something that is not an address"
                ) from None
            self._check_ip(ip, name_allowed=allowed_by_name)
        return addresses

    def _check_host(self, host: str, *, bracketed: bool) -> str:
        if not host:
            raise BlockedByPolicy("URL has no host")
        if bracketed:
            if "%" in host:
                raise BlockedByPolicy("IPv6 zone identifiers are not allowed")
            try:
                ip = ipaddress.IPv6Address(host)
            except ValueError:
                raise BlockedByPolicy("malformed IPv6 address") from None
            self._check_ip(ip, name_allowed=False)
            return ip.compressed
        name = _norm(host)
        labels = name.split(".")
        if _numeric_label_match(labels[-1]):
            if not _canonical_ipv4_match(name):
                raise BlockedByPolicy(
                    f"ambiguous numeric host {host!r}: write the address in dotted decimal"
                )
            ip4 = ipaddress.IPv4Address(name)
            self._check_ip(ip4, name_allowed=False)
            return str(ip4)
        _check_name_syntax(name, labels)
        reason = _DENIED_NAMES.get(name)
        if reason is not None:
            raise BlockedByPolicy(f"{reason} {name!r}")
        if (name == "localhost" or name.endswith(_LOOPBACK_NAMES[1])) and not self.allow_loopback:
            raise BlockedByPolicy(f"loopback host name {name!r}", allowed_by=ALLOWED_BY_LOOPBACK)
        return name

    def _check_ip(self, ip: IPAddress, *, name_allowed: bool) -> None:
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.scope_id:
                ip = ipaddress.IPv6Address(ip.compressed.split("%", 1)[0])
            embedded = _embedded_ipv4(ip)
            if embedded is not None:
                try:
                    self._check_ip(embedded, name_allowed=name_allowed)
                except BlockedByPolicy as exc:
                    raise BlockedByPolicy(
                        f"{exc.reason} (embedded in {ip.compressed})", allowed_by=exc.allowed_by
                    ) from None
                return
        for network, reason in _ALWAYS_DENIED:
            if ip in network:
                raise BlockedByPolicy(f"{reason} {ip.compressed}")
        if ip.is_loopback:
            if self.allow_loopback:
                return
            raise BlockedByPolicy(
                f"loopback address {ip.compressed}", allowed_by=ALLOWED_BY_LOOPBACK
            )
        if name_allowed or any(ip in network for network in self.networks):
            return
        for network, reason in _PRIVATE:
            if ip in network:
                raise BlockedByPolicy(
                    f"{reason} {ip.compressed} is not in the allow-list",
                    allowed_by=ALLOWED_BY_ALLOW_LIST,
                )
        if not ip.is_global:
            raise BlockedByPolicy(
                f"non-global address {ip.compressed} is not in the allow-list",
                allowed_by=ALLOWED_BY_ALLOW_LIST,
            )
        raise BlockedByPolicy(
            f"public address {ip.compressed} is not in the allow-list",
            allowed_by=ALLOWED_BY_ALLOW_LIST,
        )

    def _name_allowed(self, name: str) -> bool:
        if name in self.names:
            return True
        return any(name == suffix[1:] or name.endswith(suffix) for suffix in self.suffixes)


def _norm(host: str) -> str:
    """Lowercase, without the trailing dot that makes a name fully qualified."""
    host = host.lower()
    return host[:-1] if host.endswith(".") and not host.endswith("..") else host


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _IPV4_COMPATIBLE and int(ip) > 1:
        return ipaddress.IPv4Address(int(ip))
    return None


def _check_name_syntax(name: str, labels: list[str]) -> None:
    if len(name) > 253:
        raise BlockedByPolicy("host name longer than 253 characters")
    for label in labels:
        if not _label_match(label):
            raise BlockedByPolicy(f"invalid host name {name[:64]!r}")
        if label.startswith("xn--") or label[2:4] == "--":
            _check_idn_label(label, name)


def _check_idn_label(label: str, name: str) -> None:
    """A punycode label must be valid IDNA 2008, round-trip exactly, and use one script."""
    if not label.startswith("xn--"):
        raise BlockedByPolicy(f"invalid host name {name[:64]!r} (hyphens in positions 3-4)")
    try:
        decoded = idna.decode(label)
        if idna.encode(decoded).decode("ascii") != label:
            raise idna.IDNAError("does not round-trip")
    except (idna.IDNAError, UnicodeError, ValueError):
        raise BlockedByPolicy(f"invalid internationalised host name {name[:64]!r}") from None
    scripts = {
        unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]
        for char in decoded
        if unicodedata.category(char).startswith("L")
    }
    if len(scripts) > 1:
        raise BlockedByPolicy(
            f"host name {name[:64]!r} mixes scripts ({', '.join(sorted(scripts))})"
        )


def _allow_entry(entry: str) -> Network | str:
    """A network, a host name, or a name suffix (which starts with a dot)."""
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError(f"empty or non-text allow-list entry {entry!r}")
    text = entry.strip().lower()
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        pass
    if text.startswith("*."):
        text = text[1:]
    suffix = text.startswith(".")
    name = _norm(text[1:] if suffix else text)
    labels = name.split(".")
    if not name or not all(_label_match(label) for label in labels):
        raise ValueError(f"allow-list entry {entry!r} is neither a network nor a host name")
    if _numeric_label_match(labels[-1]):
        raise ValueError(f"allow-list entry {entry!r} looks numeric but is not an address")
    return "." + name if suffix else name
