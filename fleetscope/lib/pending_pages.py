"""Pages for sections not built yet: they say so plainly instead of showing empty charts."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@dataclass(frozen=True)
class PendingSection:
    section: str
    title: str
    will_show: str


def render_pending(request: HttpRequest, pending: PendingSection) -> HttpResponse:
    return render(request, "section_pending.html", {"pending": pending, "section": pending.section})
