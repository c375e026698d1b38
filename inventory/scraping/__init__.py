"""Scraping: the GET-only HTTP choke point (`outbound`), the outbound address policy
(`policy`), one scrape with its caps and deadline (`scraper`) and the worker processes
that run a cycle's scrapes (`pool`)."""

from __future__ import annotations

from inventory.scraping.outbound import (
    REQUEST_OBSERVERS,
    AnswerTooLarge,
    WriteAttempted,
    requests_session,
    scrape_session,
    sync_client,
)
from inventory.scraping.policy import (
    ALLOWED_BY_ALLOW_LIST,
    ALLOWED_BY_LOOPBACK,
    POLICY_SETTING_HINTS,
    BlockedByPolicy,
    OutboundPolicy,
    policy_refusal,
)
from inventory.scraping.pool import (
    FleetJob,
    ScrapeConfig,
    ScrapePool,
    shard_of,
)
from inventory.scraping.scraper import (
    ErrorKind,
    Resolver,
    ScrapeFailed,
    ScrapeLimits,
    ScrapeOutcome,
    Scraper,
)

__all__ = [
    "ALLOWED_BY_ALLOW_LIST",
    "ALLOWED_BY_LOOPBACK",
    "AnswerTooLarge",
    "POLICY_SETTING_HINTS",
    "REQUEST_OBSERVERS",
    "BlockedByPolicy",
    "ErrorKind",
    "FleetJob",
    "OutboundPolicy",
    "Resolver",
    "ScrapeConfig",
    "ScrapeFailed",
    "ScrapeLimits",
    "ScrapeOutcome",
    "ScrapePool",
    "Scraper",
    "WriteAttempted",
    "policy_refusal",
    "requests_session",
    "scrape_session",
    "shard_of",
    "sync_client",
]
