"""An entry as the sentence the incident page shows."""

from __future__ import annotations

from typing import Any

from audit.models import AuditEntry
from audit.text import entry_text


def an_entry(action: str, changes: dict[str, Any], **given: Any) -> AuditEntry:
    fields: dict[str, Any] = {
        "actor": "alice",
        "action": action,
        "object_type": "slo_objective",
        "object_text": "prod/chat-latency objective ttft",
        "changes": changes,
    }
    return AuditEntry(**(fields | given))


def test_a_threshold_change_reads_from_to_with_its_unit_and_who() -> None:
    entry = an_entry("update", {"threshold_seconds": [2.5, 1.5], "target": [0.99, 0.995]})
    assert entry_text(entry) == (
        "SLO prod/chat-latency objective ttft: threshold 2.5 -> 1.5 s; target 0.99 -> 0.995, "
        "by alice"
    )


def test_a_created_object_lists_its_first_values_and_skips_empty_ones() -> None:
    changes = {name: [None, value] for name, value in
               {"kind": "ttft", "threshold_seconds": 2.5, "note": "", "a": 1, "b": 2, "c": 3,
                "d": 4, "e": 5}.items()}  # fmt: skip
    text = entry_text(an_entry("create", changes))
    assert text == (
        "SLO prod/chat-latency objective ttft: created with kind ttft, threshold 2.5 s, a 1, "
        "b 2, c 3, d 4 and 1 more, by alice"
    )


def test_long_text_is_summarised_by_its_length_and_a_secret_only_as_changed() -> None:
    entry = an_entry(
        "update",
        {"body_markdown": ["x" * 100, "y" * 120], "api_token": ["(secret)", "changed"]},
        object_type="runbook",
        object_text="ttft-queue-load",
        actor="command:runbooks_load",
    )
    assert entry_text(entry) == (
        "runbook ttft-queue-load: body markdown changed (100 -> 120 characters); "
        "api token changed, by command:runbooks_load"
    )


def test_a_deleted_object_says_what_it_had() -> None:
    entry = an_entry(
        "delete",
        {"tenant": ["acme", None], "pattern": ["re:acme-.*", None], "order": [0, None]},
        object_type="tenant_rule",
        object_text="acme: gateway_label re:acme-.*",
        actor="system",
    )
    assert entry_text(entry) == (
        "tenant rule acme: gateway_label re:acme-.*: deleted; it had tenant acme, "
        "pattern re:acme-.*, order 0, by system"
    )
