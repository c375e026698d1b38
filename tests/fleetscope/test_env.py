from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from fleetscope.env import Env


def test_bool_accepts_true_false_on_off() -> None:
    env = Env({"A": "true", "B": "OFF", "C": " on "})
    assert env.bool("A", default=False) is True
    assert env.bool("B", default=True) is False
    assert env.bool("C", default=False) is True
    assert env.bool("MISSING", default=True) is True


@pytest.mark.parametrize("typo", ["yes", "1", "ture", "0"])
def test_bool_rejects_ambiguous_words_naming_the_variable(typo: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"^DEBUG: expected true/false"):
        Env({"DEBUG": typo}).bool("DEBUG", default=False)


def test_int_rejects_non_integers_and_values_below_minimum() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"^N: expected an integer, got '1.5'"):
        Env({"N": "1.5"}).int("N", 3)
    with pytest.raises(ImproperlyConfigured, match=r"^N: must be at least 1, got 0"):
        Env({"N": "0"}).int("N", 3, minimum=1)


def test_float_rejects_nan_and_infinity() -> None:
    for value in ("nan", "inf", "-Infinity"):
        with pytest.raises(ImproperlyConfigured, match="finite"):
            Env({"F": value}).float("F", 1.0)


def test_secret_reads_file_variant_and_strips_newline(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    assert Env({"SECRET_KEY_FILE": str(secret)}).secret("SECRET_KEY") == "s3cret"


def test_secret_refuses_both_variants_and_unreadable_or_empty_files(tmp_path: Path) -> None:
    with pytest.raises(ImproperlyConfigured, match="not both"):
        Env({"K": "a", "K_FILE": "/x"}).secret("K")
    with pytest.raises(ImproperlyConfigured, match=r"^K_FILE: cannot read"):
        Env({"K_FILE": str(tmp_path / "missing")}).secret("K")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ImproperlyConfigured, match=r"^K_FILE: .* is empty"):
        Env({"K_FILE": str(empty)}).secret("K")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ftp://prom:9090", "scheme must be one of http, https"),
        ("http://", "no host"),
        ("http://prom:99999", "port is not a number"),
        ("http://prom:0", "port 0"),
        ("http://prom:9090/#x", "fragment"),
        ("http://prom 9090", "whitespace"),
        ("http:\\\\prom", "backslashes"),
    ],
)
def test_url_rejects_malformed_values(value: str, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=rf"^PROMETHEUS_URL: .*{message}"):
        Env({"PROMETHEUS_URL": value}).url("PROMETHEUS_URL", frozenset({"http", "https"}))


def test_list_splits_on_commas_and_drops_blanks() -> None:
    assert Env({"H": "a.example, b.example,,"}).list("H", []) == ["a.example", "b.example"]


def test_log_level_takes_logging_names_in_any_case() -> None:
    assert Env({"LOG_LEVEL": " debug "}).log_level("LOG_LEVEL", "INFO") == "DEBUG"
    assert Env({}).log_level("LOG_LEVEL", "INFO") == "INFO"
    with pytest.raises(ImproperlyConfigured, match=r"^LOG_LEVEL: expected one of DEBUG, INFO"):
        Env({"LOG_LEVEL": "WARN"}).log_level("LOG_LEVEL", "INFO")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("example.com", "needs a scheme"),
        ("ws://example.com", "needs a scheme"),
        ("https://", "has no host"),
        ("https://example.com:0x50", "bad port"),
        ("https://user:pw@example.com", "must not hold a user or password"),
        ("https://example.com/dashboard", "without a path"),
        ("http://127.0.0.1:8001/", "without a path or slash"),
    ],
)
def test_origins_must_be_scheme_host_and_port(value: str, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=rf"^CSRF_TRUSTED_ORIGINS: .*{message}"):
        Env({"CSRF_TRUSTED_ORIGINS": f"https://ok.example, {value}"}).origins(
            "CSRF_TRUSTED_ORIGINS"
        )


def test_origins_keep_ports_and_subdomain_wildcards() -> None:
    value = "https://a.example, http://127.0.0.1:8001, https://*.example.org"
    assert Env({"O": value}).origins("O") == [
        "https://a.example",
        "http://127.0.0.1:8001",
        "https://*.example.org",
    ]
