"""The capacity pages' forms: a model profile from a pasted or uploaded config.json."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from capacity.model_profiles import model_profile_from_config
from capacity.models import ModelProfile
from capacity.profiles import ModelConfigError

MAX_CONFIG_BYTES = 1024 * 1024  # a config.json is a few KiB; anything this big is not one


class ModelProfileConfigForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        help_text="How plans will name it, e.g. Llama-3.1-8B-Instruct.",
    )
    params = forms.IntegerField(
        required=False,
        min_value=1,
        label="Parameter count",
        help_text="Optional: e.g. 8030261248. Left blank, it is estimated from the config "
        "(not for mixture-of-experts models).",
    )
    config_text = forms.CharField(
        required=False,
        label="config.json",
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "class": "mono"}),
        help_text="Paste the model's Hugging Face config.json.",
    )
    config_file = forms.FileField(
        required=False,
        label="or upload config.json",
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        text = str(data.get("config_text") or "").strip()
        upload = data.get("config_file")
        if text and upload:
            raise ValidationError("give the config.json once: pasted or uploaded, not both")
        if upload:
            if upload.size > MAX_CONFIG_BYTES:
                self.add_error("config_file", "larger than 1 MiB: not a config.json")
                return data
            raw = upload.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.add_error("config_file", "config.json: not UTF-8 text")
                return data
        if not text:
            self.add_error("config_text", "paste a config.json or upload one")
        data["config"] = text
        return data

    def config_field(self) -> str:
        return "config_file" if self.cleaned_data.get("config_file") else "config_text"

    def save(self) -> ModelProfile | None:
        """Create the profile, or put what is wrong on the form and return None."""
        if not self.is_valid():
            return None
        data = self.cleaned_data
        try:
            return model_profile_from_config(
                name=data["name"], config_text=data["config"], params=data.get("params")
            )
        except ModelConfigError as exc:
            field = "params" if exc.field == "params" else self.config_field()
            self.add_error(field, f"{exc.field}: {exc.message}")
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                target = name if name in ("name", "params") else None
                for message in messages:
                    self.add_error(target, f"{name}: {message}" if target is None else message)
        return None
