"""Direction controls shown, not applied. The explicit embeddings, overrides and isolates
(U+202A-U+202E, U+2066-U+2069) reorder the text after them: "invoice\u202egpj.exe" reads
"invoiceexe.jpg". Isolating the element (`unicode-bidi: isolate`) only stops the effect at
its edge, so in text from outside (runbooks, notes, alert labels) each is replaced by a
visible marker naming it. Marks (U+200E, U+200F, U+061C) stay: right-to-left scripts read
correctly without any of these, and the marks cannot reverse a run of text."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _marker(match: re.Match[str]) -> str:
    char = match.group(0)
    name = unicodedata.name(char)
    return f'<span class="bidi-control" title="{name}, shown, not applied">U+{ord(char):04X}</span>'


def bidi_marked(escaped: str) -> str:
    """`escaped` (HTML-escaped text, never markup with attributes) with each control
    replaced by a marker element."""
    return CONTROLS.sub(_marker, escaped)


def bidi_html(value: Any) -> SafeString:
    """`value` escaped for HTML, its controls shown as markers."""
    # Safe: the text is escaped first, and a marker holds only a Unicode name and number.
    return mark_safe(bidi_marked(str(conditional_escape(value))))


def bidi_plain(value: Any) -> str:
    """`value` with its controls written as "[U+202E]", for places markup cannot go (the
    page's <title>); the template still escapes it."""
    return CONTROLS.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", str(value))
