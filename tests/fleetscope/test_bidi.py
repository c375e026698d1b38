"""Direction controls from outside text are shown as markers, never applied
(fleetscope.lib.bidi); the browser side is tests/triage/test_hostile_browser.py."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from fleetscope.lib.bidi import bidi_html, bidi_plain

MARKER = '<span class="bidi-control" title="RIGHT-TO-LEFT OVERRIDE, shown, not applied">'


def test_an_override_becomes_a_visible_marker_in_escaped_text() -> None:
    html = bidi_html("<b>invoice\u202egpj.exe</b>")
    assert html == f"&lt;b&gt;invoice{MARKER}U+202E</span>gpj.exe&lt;/b&gt;"


@pytest.mark.parametrize("char", [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))])
def test_every_embedding_override_and_isolate_is_shown(char: str) -> None:
    assert char not in bidi_html(f"a{char}b")
    assert f"U+{ord(char):04X}</span>" in bidi_html(f"a{char}b")
    assert bidi_plain(f"a{char}b") == f"a[U+{ord(char):04X}]b"


def test_marks_and_right_to_left_text_are_left_as_they_are() -> None:
    text = "\u05e9\u05dc\u05d5\u05dd \u200f\u200e\u061c \u0645\u0631\u062d\u0628\u0627"
    assert bidi_html(text) == text


def test_the_filters_escape_what_they_mark() -> None:
    template = Template("{% load bidi %}<title>{{ v|bidi_plain }}</title><p>{{ v|bidi }}</p>")
    page = template.render(Context({"v": "<i>x\u202ey</i>"}))
    assert page.startswith("<title>&lt;i&gt;x[U+202E]y&lt;/i&gt;</title>")
    assert f"<p>&lt;i&gt;x{MARKER}U+202E</span>y&lt;/i&gt;</p>" in page
