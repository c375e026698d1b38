"""`{% load bidi %}`: `value|bidi` shows direction controls as markers (fleetscope.lib.bidi);
`value|bidi_plain` writes them as text, for the <title>."""

from __future__ import annotations

from django import template

from fleetscope.lib import bidi as lib

register = template.Library()
register.filter("bidi", lib.bidi_html)
register.filter("bidi_plain", lib.bidi_plain)
