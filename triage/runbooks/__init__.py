"""The runbook of every leaf of the triage tree (seeded by a data migration), and the inert
Markdown rendering of runbook bodies."""

from __future__ import annotations

from typing import Any

from triage.runbooks.markdown import markdown_inert
from triage.runbooks.seeds import LEAVES, RUNBOOK_SEEDS, RunbookSeed, runbook_slug

__all__ = [
    "LEAVES",
    "RUNBOOK_SEEDS",
    "RunbookSeed",
    "markdown_inert",
    "runbook_slug",
    "runbooks_seed",
]


def runbooks_seed(runbook_model: Any) -> int:
    """Create the runbook of each leaf that has none yet; return how many were created.

    Takes the model as an argument so the data migration can pass its historical model.
    A runbook that exists is left as it is: people edit them in the admin."""
    created = 0
    for seed in RUNBOOK_SEEDS:
        _, was_created = runbook_model.objects.get_or_create(
            slug=seed.slug,
            defaults={
                "title": seed.title,
                "owner_team": seed.owner_team,
                "body_markdown": seed.body_markdown.strip(),
            },
        )
        created += int(was_created)
    return created
