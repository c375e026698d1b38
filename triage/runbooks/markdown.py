"""Runbook Markdown made inert: a small subset (headings, bullet and numbered lists, code
spans, fenced code, paragraphs) rendered from text that is HTML-escaped first, so a body
edited in the admin can never carry markup, scripts or links that run; a link's Markdown
shows as its text. Direction controls are shown as markers (fleetscope.lib.bidi). No
Markdown library is a dependency, and a runbook needs no more than this."""

from __future__ import annotations

import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

from fleetscope.lib.bidi import bidi_marked

HEADING = re.compile(r"^(#{1,4})\s+(.*)$")
BULLET = re.compile(r"^\s*[-*]\s+(.*)$")
NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
CODE_SPAN = re.compile(r"`([^`]+)`")
STRONG = re.compile(r"\*\*([^*]+)\*\*")


def _inline(text: str) -> str:
    """Escaped text with `code` and **strong** spans; the spans hold escaped text only."""
    escaped = bidi_marked(str(escape(text)))
    escaped = CODE_SPAN.sub(r"<code>\1</code>", escaped)
    return STRONG.sub(r"<strong>\1</strong>", escaped)


def _code_block(lines: list[str]) -> str:
    return "<pre><code>" + bidi_marked(str(escape("\n".join(lines)))) + "</code></pre>"


def markdown_inert(text: str, *, anchor_prefix: str = "") -> SafeString:
    """HTML for `text`; each heading gets an id (`anchor_prefix` + its slug) to link to."""
    out: list[str] = []
    paragraph: list[str] = []
    list_tag = ""
    item: list[str] = []  # the open list item: an indented line below it continues it
    fence: list[str] | None = None

    def close_item() -> None:
        if item:
            out.append("<li>" + _inline(" ".join(item)) + "</li>")
            item.clear()

    def close_paragraph() -> None:
        if paragraph:
            out.append("<p>" + _inline(" ".join(paragraph)) + "</p>")
            paragraph.clear()

    def close_list() -> None:
        nonlocal list_tag
        close_item()
        if list_tag:
            out.append(f"</{list_tag}>")
            list_tag = ""

    def open_list(tag: str) -> None:
        nonlocal list_tag
        close_paragraph()
        if list_tag != tag:
            close_list()
            out.append(f"<{tag}>")
            list_tag = tag

    for line in text.splitlines():
        if fence is not None:
            if line.strip().startswith("```"):
                out.append(_code_block(fence))
                fence = None
            else:
                fence.append(line)
            continue
        if line.strip().startswith("```"):
            close_paragraph()
            close_list()
            fence = []
        elif heading := HEADING.match(line):
            close_paragraph()
            close_list()
            level = len(heading.group(1)) + 1  # the page's own title is the h1
            anchor = escape(anchor_prefix + slugify(heading.group(2)))
            out.append(f'<h{level} id="{anchor}">{_inline(heading.group(2))}</h{level}>')
        elif bullet := BULLET.match(line):
            open_list("ul")
            close_item()
            item.append(bullet.group(1))
        elif numbered := NUMBERED.match(line):
            open_list("ol")
            close_item()
            item.append(numbered.group(1))
        elif item and line[:1].isspace() and line.strip():
            item.append(line.strip())
        elif not line.strip():
            close_paragraph()
            close_list()
        else:
            close_list()
            paragraph.append(line.strip())
    if fence is not None:  # an unclosed fence still shows its text
        out.append(_code_block(fence))
    close_paragraph()
    close_list()
    # Safe: every piece of text above went through escape() before any tag was added.
    return mark_safe("\n".join(out))
