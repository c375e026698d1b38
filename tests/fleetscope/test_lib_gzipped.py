"""Compressed once, sent as is to clients that accept gzip, inflated for the others."""

from __future__ import annotations

import gzip

from django.test import RequestFactory

from fleetscope.lib import gzipped

TEXT = '{"panels": [' + ", ".join(f'{{"id": {i}}}' for i in range(500)) + "]}"


def test_compress_is_plain_gzip_and_the_same_for_the_same_text() -> None:
    data = gzipped.compress(TEXT)
    assert gzip.decompress(data).decode() == TEXT
    assert gzipped.compress(TEXT) == data  # no timestamp in the header
    assert gzipped.decompress(data) == TEXT
    assert len(data) < len(TEXT) / 5


def test_response_sends_the_compressed_bytes_to_a_client_that_accepts_gzip() -> None:
    request = RequestFactory().get("/x", HTTP_ACCEPT_ENCODING="br, gzip;q=0.8")
    data = gzipped.compress(TEXT)
    answer = gzipped.response(request, data, "application/json")
    assert answer.content == data
    assert answer["Content-Encoding"] == "gzip"
    assert answer["Content-Type"] == "application/json"
    assert answer["Vary"] == "Accept-Encoding"


def test_response_inflates_for_a_client_that_does_not_accept_gzip() -> None:
    request = RequestFactory().get("/x", HTTP_ACCEPT_ENCODING="identity")
    answer = gzipped.response(request, gzipped.compress(TEXT), "application/json")
    assert answer.content.decode() == TEXT
    assert not answer.has_header("Content-Encoding")
    assert answer["Vary"] == "Accept-Encoding"
