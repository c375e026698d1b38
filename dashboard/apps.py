from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Dashboard"

    def ready(self) -> None:
        from dashboard.capabilities import panel_capabilities
        from inventory.capabilities import capability_provider_register

        capability_provider_register("panel", panel_capabilities)
