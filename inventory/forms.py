from __future__ import annotations

from typing import Any

from django import forms

from inventory.models import Endpoint, Fleet, PrometheusSource


class EndpointForm(forms.ModelForm):
    """Register one /metrics URL; the model's clean() applies the outbound policy."""

    class Meta:
        model = Endpoint
        fields = ["url", "kind"]
        widgets = {
            "url": forms.TextInput(
                attrs={"placeholder": "http://10.0.0.5:8000/metrics", "size": 48}
            )
        }

    def clean_url(self) -> str:
        url: str = self.cleaned_data["url"]
        # The fleet is not a form field, so Django's unique check cannot see this clash.
        if Endpoint.objects.filter(fleet=self.instance.fleet, url=url).exists():
            raise forms.ValidationError("this URL is already registered in this fleet")
        return url


class DiscoveryForm(forms.Form):
    """Pick one of the fleet's enabled Prometheus sources to discover targets from."""

    source = forms.ModelChoiceField(queryset=PrometheusSource.objects.none(), empty_label=None)

    def __init__(self, *args: Any, fleet: Fleet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["source"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = fleet.prometheus_sources.enabled()
