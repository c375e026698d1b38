from django.apps import AppConfig


class SloConfig(AppConfig):
    name = "slo"
    verbose_name = "SLOs"

    def ready(self) -> None:
        from inventory.capabilities import capability_provider_register
        from slo.capabilities import objective_capabilities

        capability_provider_register("slo", objective_capabilities)
