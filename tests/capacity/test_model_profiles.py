"""A model profile from a pasted or uploaded config.json: created when the formulas cover
the model, refused with the field that shows why when they do not."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from capacity.model_profiles import model_profile_from_config
from capacity.models import ModelProfile
from capacity.profiles import ModelConfigError
from tests.capacity.conftest import LLAMA_8B_CONFIG
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db

NEW = "/capacity/profiles/new/"
MLA_CONFIG = {
    **LLAMA_8B_CONFIG,
    "architectures": ["DeepseekV3ForCausalLM"],
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
}


def test_a_llama_config_makes_a_profile_with_its_shape_and_estimated_parameters() -> None:
    profile = model_profile_from_config(
        name="Llama-3.1-8B", config_text=json.dumps(LLAMA_8B_CONFIG)
    )
    profile.refresh_from_db()
    assert (profile.layers, profile.attention_heads, profile.kv_heads, profile.head_dim) == (
        32, 32, 8, 128,
    )  # fmt: skip
    assert profile.dtype == "bf16"
    assert profile.params == 8_030_261_248
    assert profile.architecture == "LlamaForCausalLM"
    assert profile.origin == ModelProfile.Origin.CONFIG
    assert profile.config == LLAMA_8B_CONFIG


def test_an_entered_parameter_count_wins_over_the_estimate() -> None:
    profile = model_profile_from_config(
        name="Llama", config_text=json.dumps(LLAMA_8B_CONFIG), params=8_000_000_000
    )
    assert profile.params == 8_000_000_000


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (json.dumps(MLA_CONFIG), "kv_lora_rank"),
        (json.dumps({**LLAMA_8B_CONFIG, "sliding_window": 4096}), "sliding_window"),
        (json.dumps({**LLAMA_8B_CONFIG, "num_hidden_layers": 0}), "num_hidden_layers"),
        ('{"num_hidden_layers": 32,', "config.json"),
    ],
)
def test_a_config_the_formulas_do_not_cover_is_refused_naming_the_field(
    config: str, field: str
) -> None:
    with pytest.raises(ModelConfigError) as caught:
        model_profile_from_config(name="refused", config_text=config)
    assert caught.value.field == field
    assert not ModelProfile.objects.exists()


def test_a_name_already_taken_is_refused_by_the_models_own_checks() -> None:
    model_profile_from_config(name="Llama", config_text=json.dumps(LLAMA_8B_CONFIG))
    with pytest.raises(ValidationError) as caught:
        model_profile_from_config(name="Llama", config_text=json.dumps(LLAMA_8B_CONFIG))
    assert "name" in caught.value.message_dict
    assert ModelProfile.objects.count() == 1


def test_the_form_creates_a_profile_and_goes_to_the_capacity_index(owner_client: Client) -> None:
    page = owner_client.get(NEW)
    assert page.status_code == 200 and b"csrfmiddlewaretoken" in page.content
    response = owner_client.post(
        NEW, {"name": "Llama-3.1-8B-Instruct", "config_text": json.dumps(LLAMA_8B_CONFIG)},
        follow=True,
    )  # fmt: skip
    assert response.redirect_chain == [("/capacity/", 302)]
    html = response.content.decode()
    assert "Model profile Llama-3.1-8B-Instruct created from its config.json" in html
    assert ModelProfile.objects.get().kv_heads == 8


def test_the_form_takes_an_uploaded_config(owner_client: Client) -> None:
    upload = SimpleUploadedFile("config.json", json.dumps(LLAMA_8B_CONFIG).encode())
    response = owner_client.post(NEW, {"name": "uploaded", "config_file": upload})
    assert response.status_code == 302
    assert ModelProfile.objects.get().name == "uploaded"


@pytest.mark.parametrize(
    ("config", "shown"),
    [
        (json.dumps(MLA_CONFIG), "kv_lora_rank: multi-head latent attention (MLA)"),
        (json.dumps({**LLAMA_8B_CONFIG, "sliding_window": 4096}), "sliding_window: "),
        ("not json", "config.json: not valid JSON"),
        (json.dumps({**LLAMA_8B_CONFIG, "num_hidden_layers": 0}), "num_hidden_layers: must be"),
        ("", "paste a config.json or upload one"),
    ],
)
def test_the_form_shows_a_refusal_naming_the_field(
    owner_client: Client, config: str, shown: str
) -> None:
    response = owner_client.post(NEW, {"name": "refused", "config_text": config})
    assert response.status_code == 200
    html = response.content.decode()
    assert shown in html
    assert 'class="errorlist' in html
    assert not ModelProfile.objects.exists()


def test_the_form_needs_a_csrf_token() -> None:

    client = Client(enforce_csrf_checks=True)
    client.force_login(user_with_role("csrf", "admin", password="csrf-password-1"))
    response = client.post(NEW, {"name": "x", "config_text": json.dumps(LLAMA_8B_CONFIG)})
    assert response.status_code == 403
    assert not ModelProfile.objects.exists()


def test_a_profile_name_with_a_script_is_escaped(owner_client: Client) -> None:
    evil = "<script>alert(1)</script>"
    response = owner_client.post(
        NEW, {"name": evil, "config_text": json.dumps(LLAMA_8B_CONFIG)}, follow=True
    )
    html = response.content.decode()
    assert evil not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    refused = owner_client.post(NEW, {"name": evil, "config_text": json.dumps(MLA_CONFIG)})
    assert evil not in refused.content.decode()
