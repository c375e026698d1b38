"""The outbound address policy: every spelling of reliability.md group C, items 14-19."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from inventory.scraping.policy import (
    ALLOWED_BY_ALLOW_LIST,
    ALLOWED_BY_LOOPBACK,
    BlockedByPolicy,
    OutboundPolicy,
)

STRICT = OutboundPolicy(allow=[], allow_loopback=False)
DEMO = OutboundPolicy(allow=[], allow_loopback=True)
EVERYTHING = OutboundPolicy(allow=["0.0.0.0/0", "::/0"], allow_loopback=False)
FLEET = OutboundPolicy(
    allow=["10.20.0.0/16", "fd12:3456::/32", "203.0.113.8", "*.vllm.svc.cluster.local"],
    allow_loopback=False,
)


def blocked(policy: OutboundPolicy, url: str) -> str:
    with pytest.raises(BlockedByPolicy) as raised:
        policy.check_url(url)
    return raised.value.reason


# Item 14: cloud metadata, refused even by an allow-list that admits everything.
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata address 169.254.169.254"),
        ("http://[fd00:ec2::254]/", "cloud metadata address fd00:ec2::254"),
        ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata host name"),
        ("http://METADATA.google.internal./", "cloud metadata host name"),
        ("http://100.100.100.200/latest/", "cloud metadata address 100.100.100.200"),
        ("http://[::ffff:169.254.169.254]/", "cloud metadata address 169.254.169.254 (embedded"),
    ],
)
def test_cloud_metadata_targets_are_refused_whatever_the_allow_list(url: str, reason: str) -> None:
    assert reason in blocked(EVERYTHING, url)


# Item 15: every spelling of loopback, with loopback not allowed.
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://localhost:8000/metrics", "loopback host name 'localhost'"),
        ("http://vllm.localhost/metrics", "loopback host name"),
        ("http://127.0.0.1:8000/metrics", "loopback address 127.0.0.1"),
        ("http://127.1/metrics", "ambiguous numeric host '127.1'"),
        ("http://0x7f000001/metrics", "ambiguous numeric host '0x7f000001'"),
        ("http://2130706433/metrics", "ambiguous numeric host '2130706433'"),
        ("http://017700000001/metrics", "ambiguous numeric host '017700000001'"),
        ("http://0177.0.0.1/metrics", "ambiguous numeric host"),
        ("http://127.0.0.01/metrics", "ambiguous numeric host"),
        ("http://[::1]/metrics", "loopback address ::1"),
        ("http://[::ffff:127.0.0.1]/metrics", "loopback address 127.0.0.1 (embedded in"),
        ("http://[0:0:0:0:0:ffff:7f00:1]/metrics", "loopback address 127.0.0.1 (embedded in"),
        ("http://0.0.0.0/metrics", "'this network' address 0.0.0.0"),
        ("http://[::]/metrics", "unspecified address"),
    ],
)
def test_loopback_in_every_spelling_is_refused(url: str, reason: str) -> None:
    assert reason in blocked(STRICT, url)


# Item 16: private and translated forms that `ipaddress.is_private` alone misses.
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.1.2.3/", "private address (RFC 1918) 10.1.2.3 is not in the allow-list"),
        ("http://172.16.0.1/", "private address (RFC 1918)"),
        ("http://192.168.1.10/", "private address (RFC 1918)"),
        ("http://100.64.0.1/", "shared address space (CGNAT)"),
        ("http://[fc00::1]/", "unique local address"),
        ("http://[fd12:3456::1]/", "unique local address"),
        ("http://[fe80::1]/", "link-local address"),
        ("http://169.254.10.10/", "link-local address"),
        ("http://[64:ff9b::a9fe:a9fe]/", "cloud metadata address 169.254.169.254 (embedded"),
        ("http://[64:ff9b::a00:1]/", "private address (RFC 1918) 10.0.0.1"),
        ("http://[2002:a9fe:a9fe::]/", "cloud metadata address 169.254.169.254 (embedded"),
        ("http://[2002:7f00:1::]/", "loopback address 127.0.0.1 (embedded"),
        ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo tunnel address"),
        ("http://[64:ff9b:1::a00:1]/", "local-use NAT64 address"),
        ("http://224.0.0.1/", "multicast address"),
        ("http://[ff02::1]/", "multicast address"),
        ("http://255.255.255.255/", "broadcast address"),
        ("http://8.8.8.8/", "public address 8.8.8.8 is not in the allow-list"),
    ],
)
def test_private_translated_and_public_addresses_need_the_allow_list(url: str, reason: str) -> None:
    assert reason in blocked(STRICT, url)


# Item 19: schemes, user information, fragments, backslashes, look-alikes, ports.
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "scheme 'file' is not allowed"),
        ("gopher://10.20.0.5:70/_GET", "scheme 'gopher' is not allowed"),
        ("ftp://10.20.0.5/", "scheme 'ftp' is not allowed"),
        ("//10.20.0.5/metrics", "scheme '(none)' is not allowed"),
        ("http://user:pass@10.20.0.5/metrics", "user information"),
        ("http://@10.20.0.5/metrics", "user information"),
        ("http://good.example#@10.20.0.5/", "fragment"),
        ("http://10.20.0.5/metrics#frag", "fragment"),
        ("http://good.example\\@10.20.0.5/", "backslash"),
        ("http:\\\\10.20.0.5\\metrics", "backslash"),
        ("http://10.20.0.5 /metrics", "whitespace or control characters"),
        ("http://10.20.0.5/\nmetrics", "whitespace or control characters"),
        ("http://exаmple.com/metrics", "must be ASCII"),
        ("http://xn--pple-43d.com/metrics", "mixes scripts (CYRILLIC, LATIN)"),
        ("http://xn--zz-zzz.com/", "invalid internationalised host name"),
        ("http://ab--cd.example/", "hyphens in positions 3-4"),
        ("http://under_score.example/", "invalid host name"),
        ("http://%31%30.20.0.5/", "ambiguous numeric host"),
        ("http://%65xample.com/", "invalid host name"),
        ("http://[fe80::1%25eth0]/", "zone identifiers"),
        ("http://[10.20.0.5]/", "URL is malformed"),
        ("http://[fd12:3456::1::2]/", "URL is malformed"),
        ("http://10.20.0.5:99999/", "malformed"),
        ("http://10.20.0.5:0/", "port 0"),
        ("http://10.20.0.5:/", "empty port"),
        ("http:///metrics", "no host"),
    ],
)
def test_registration_refuses_urls_that_are_unsafe_or_ambiguous(url: str, reason: str) -> None:
    assert reason in blocked(FLEET, url)


def test_registration_refuses_ports_outside_an_explicit_port_list() -> None:
    policy = OutboundPolicy(allow=["10.20.0.0/16"], ports=[8000, 9400])
    assert policy.check_url("http://10.20.0.5:8000/metrics").port == 8000
    assert "port 22 is not in the allowed ports" in blocked(policy, "http://10.20.0.5:22/")
    assert "port 80 is not in the allowed ports" in blocked(policy, "http://10.20.0.5/")


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("http://10.20.0.5:8000/metrics", "http://10.20.0.5:8000/metrics"),
        ("HTTP://10.20.0.5:80", "http://10.20.0.5/"),
        ("https://[FD12:3456::0001]:443/m?x=1", "https://[fd12:3456::1]/m?x=1"),
        ("http://203.0.113.8/metrics", "http://203.0.113.8/metrics"),
        ("http://[::ffff:10.20.0.5]/", "http://[::ffff:a14:5]/"),
        ("http://vLLM-0.vllm.svc.cluster.local.:8000/metrics", None),
        ("http://xn--bcher-kva.example/metrics", "http://xn--bcher-kva.example/metrics"),
    ],
)
def test_registration_accepts_and_normalises_allowed_targets(url: str, normalised: str) -> None:
    target = FLEET.check_url(url)
    if normalised is not None:
        assert target.url == normalised
    else:
        assert (target.host, target.port, target.ip) == (
            "vllm-0.vllm.svc.cluster.local",
            8000,
            None,
        )


def test_a_host_name_passes_registration_and_is_judged_by_its_addresses() -> None:
    assert STRICT.check_url("http://vllm.example.com/metrics").host == "vllm.example.com"
    with pytest.raises(BlockedByPolicy, match="public address 93.184.215.14"):
        STRICT.resolve_and_check("vllm.example.com", 80, resolver=answers("93.184.215.14"))


def test_the_demo_default_allows_loopback_in_every_proper_spelling() -> None:
    for url in ("http://localhost:8000/", "http://127.0.0.1:8000/", "http://[::1]:8000/"):
        DEMO.check_url(url)
    assert "ambiguous numeric host" in blocked(DEMO, "http://127.1:8000/")
    assert "cloud metadata" in blocked(DEMO, "http://169.254.169.254/")
    assert "private address" in blocked(DEMO, "http://10.0.0.1/")


def test_loopback_needs_the_flag_even_when_an_allow_list_network_covers_it() -> None:
    policy = OutboundPolicy(allow=["127.0.0.0/8"], allow_loopback=False)
    assert "loopback address" in blocked(policy, "http://127.0.0.1/")


def test_check_literal_normalises_addresses_and_leaves_names_to_dns() -> None:
    assert FLEET.check_literal("[FD12:3456::1]") == "fd12:3456::1"
    assert FLEET.check_literal("10.20.0.5") == "10.20.0.5"
    assert FLEET.check_literal("a.vllm.svc.cluster.local") is None
    with pytest.raises(BlockedByPolicy, match="cloud metadata host name"):
        FLEET.check_literal("metadata.google.internal")


@pytest.mark.parametrize(
    "entry", ["", "   ", "not a host!", "10.0.0.0/33", "1.2.3", "-bad.example", "a..b"]
)
def test_the_allow_list_rejects_entries_it_cannot_understand(entry: str) -> None:
    with pytest.raises(ValueError):
        OutboundPolicy(allow=[entry])


def test_the_allow_list_must_be_a_list_not_one_string() -> None:
    with pytest.raises(TypeError):
        OutboundPolicy(allow="10.0.0.0/8")


# --- connect time: resolution and rebinding (item 17) --------------------------------------


def answers(*addresses: str) -> Callable[..., list[tuple[Any, ...]]]:
    def resolver(host: str, port: int, **kwargs: Any) -> list[tuple[Any, ...]]:
        family = socket.AF_INET6 if ":" in addresses[0] else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    return resolver


def rebinding(*rounds: str) -> Callable[..., list[tuple[Any, ...]]]:
    """A resolver whose answer changes on every call, as an attacker's DNS would."""
    sequence: Iterator[str] = iter(rounds)

    def resolver(host: str, port: int, **kwargs: Any) -> list[tuple[Any, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(sequence), port))]

    return resolver


def test_dns_rebinding_to_loopback_is_caught_at_connect_time() -> None:
    policy = OutboundPolicy(allow=["198.51.100.0/24"], allow_loopback=False)
    resolver = rebinding("198.51.100.7", "127.0.0.1")
    target = policy.check_url("http://fleet.example.com:8000/metrics")
    assert policy.resolve_and_check(target.host, target.port, resolver=resolver) == ["198.51.100.7"]
    with pytest.raises(BlockedByPolicy, match="loopback address 127.0.0.1"):
        policy.resolve_and_check(target.host, target.port, resolver=resolver)


def test_dns_rebinding_to_cloud_metadata_is_caught_even_for_an_allow_listed_name() -> None:
    resolver = rebinding("10.20.0.5", "169.254.169.254")
    host = "vllm-0.vllm.svc.cluster.local"
    assert FLEET.resolve_and_check(host, 8000, resolver=resolver) == ["10.20.0.5"]
    with pytest.raises(BlockedByPolicy, match="cloud metadata address"):
        FLEET.resolve_and_check(host, 8000, resolver=resolver)


def test_every_resolved_address_must_pass_not_just_the_first() -> None:
    with pytest.raises(BlockedByPolicy, match="loopback address 127.0.0.1"):
        FLEET.resolve_and_check("a.example", 80, resolver=answers("10.20.0.5", "127.0.0.1"))


def test_an_allow_listed_name_may_resolve_to_private_addresses() -> None:
    resolver = answers("10.99.0.7", "fd99::7")
    addresses = FLEET.resolve_and_check("vllm-1.vllm.svc.cluster.local", 8000, resolver=resolver)
    assert addresses == ["10.99.0.7", "fd99::7"]
    with pytest.raises(BlockedByPolicy, match="private address"):
        FLEET.resolve_and_check("other.example", 8000, resolver=answers("10.99.0.7"))


def test_check_address_uses_the_name_only_when_given_one() -> None:
    FLEET.check_address("10.20.9.9")
    with pytest.raises(BlockedByPolicy, match="private address"):
        FLEET.check_address("10.99.0.7")
    FLEET.check_address("10.99.0.7", host="x.vllm.svc.cluster.local")
    with pytest.raises(BlockedByPolicy, match="not an IP address"):
        FLEET.check_address("localhost")


@pytest.mark.parametrize("error", [socket.gaierror(-2, "Name or service not known"), OSError()])
def test_a_resolver_error_fails_closed(error: Exception) -> None:
    def failing(host: str, port: int, **kwargs: Any) -> list[tuple[Any, ...]]:
        raise error

    with pytest.raises(BlockedByPolicy, match="cannot resolve host 'a.example'"):
        FLEET.resolve_and_check("a.example", 80, resolver=failing)


def test_an_empty_or_malformed_resolver_answer_fails_closed() -> None:
    with pytest.raises(BlockedByPolicy, match="has no addresses"):
        FLEET.resolve_and_check("a.example", 80, resolver=lambda *a, **k: [])
    with pytest.raises(BlockedByPolicy, match="malformed answer"):
        FLEET.resolve_and_check("a.example", 80, resolver=lambda *a, **k: [("x",)])
    with pytest.raises(BlockedByPolicy, match="not an address"):
        FLEET.resolve_and_check("a.example", 80, resolver=answers("not-an-ip"))


def test_link_local_answers_with_a_zone_are_refused() -> None:
    with pytest.raises(BlockedByPolicy, match="link-local address fe80::1"):
        FLEET.resolve_and_check("a.example", 80, resolver=answers("fe80::1%eth0"))


def test_literal_hosts_are_checked_without_asking_the_resolver() -> None:
    def must_not_resolve(*args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        raise AssertionError("resolver called for a literal address")

    assert FLEET.resolve_and_check("10.20.0.5", 80, resolver=must_not_resolve) == ["10.20.0.5"]
    with pytest.raises(BlockedByPolicy, match="ambiguous numeric host"):
        FLEET.resolve_and_check("0x0a140005", 80, resolver=must_not_resolve)


@pytest.mark.parametrize(
    ("url", "allowed_by"),
    [
        ("http://127.0.0.1:9090/", ALLOWED_BY_LOOPBACK),
        ("http://localhost:9090/", ALLOWED_BY_LOOPBACK),
        ("http://[::ffff:127.0.0.1]/", ALLOWED_BY_LOOPBACK),
        ("http://10.0.0.8:8000/metrics", ALLOWED_BY_ALLOW_LIST),
        ("http://[::ffff:10.0.0.8]/", ALLOWED_BY_ALLOW_LIST),
        ("http://93.184.215.14/", ALLOWED_BY_ALLOW_LIST),
        ("http://169.254.169.254/", None),
        ("http://127.1/", None),
        ("ftp://10.0.0.8/", None),
    ],
)
def test_a_refusal_says_which_policy_argument_would_allow_the_target(
    url: str, allowed_by: str | None
) -> None:
    with pytest.raises(BlockedByPolicy) as raised:
        STRICT.check_url(url)
    assert raised.value.allowed_by == allowed_by
