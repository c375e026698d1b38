"""Scraping: the GET-only HTTP choke point (`outbound`), the outbound address policy
(`policy`), one scrape with its caps and deadline (`scraper`) and the worker processes
that run a cycle's scrapes (`pool`)."""

from __future__ import annotations

from inventory.scraping.outbound import (
    scrape_session,
    sync_client,
)
from inventory.scraping.policy import (
    BlockedByPolicy,
    OutboundPolicy,
)
from inventory.scraping.pool import (
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
    "BlockedByPolicy",
    "ErrorKind",
    "OutboundPolicy",
    "Resolver",
    "ScrapeConfig",
    "ScrapeFailed",
    "ScrapeLimits",
    "ScrapeOutcome",
    "ScrapePool",
    "Scraper",
    "scrape_session",
    "shard_of",
    "sync_client",
]
