from __future__ import annotations

from typing import Any

from django import forms

from inventory.models import Endpoint, Fleet, PrometheusSource


class EndpointForm(forms.ModelForm):
    """Register one /metrics URL; the model's clean() applies the outbound policy and
    refuses a target the fleet already holds, however it is spelled, naming the endpoint
    that holds it."""

    class Meta:
        model = Endpoint
        fields = ["url", "kind"]
        widgets = {
            "url": forms.TextInput(
                attrs={"placeholder": "http://10.0.0.5:8000/metrics", "size": 48}
            )
        }


class DiscoveryForm(forms.Form):
    """Pick one of the fleet's enabled Prometheus sources to discover targets from."""

    source = forms.ModelChoiceField(queryset=PrometheusSource.objects.none(), empty_label=None)

    def __init__(self, *args: Any, fleet: Fleet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["source"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = fleet.prometheus_sources.enabled()
