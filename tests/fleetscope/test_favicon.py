"""The favicon: linked from every page, and /favicon.ico answers anyone, logged in or not."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest
from django.test import Client
from django.urls import reverse


def test_favicon_ico_redirects_an_anonymous_client_to_the_static_svg(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 302  # not to the login page
    assert response["Location"] == "/static/favicon.svg"
    assert "public" in response["Cache-Control"]


def test_the_static_favicon_is_served_to_an_anonymous_client_as_svg(client: Client) -> None:
    response = client.get("/favicon.ico", follow=True)
    assert response.redirect_chain == [("/static/favicon.svg", 302)]
    assert response.status_code == 200
    assert response["Content-Type"].startswith("image/svg+xml")
    root = ElementTree.fromstring(response.getvalue())  # whitenoise streams it
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_favicon_ico_answers_head_and_refuses_post(client: Client) -> None:
    assert client.head("/favicon.ico").status_code == 302
    assert client.post("/favicon.ico").status_code == 405


@pytest.mark.django_db
def test_pages_link_the_favicon_so_browsers_need_not_guess(client: Client) -> None:
    html = client.get(reverse("login")).content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
