from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        from audit.actor import commands_act_as_themselves
        from audit.signals import tracked_models_connect

        tracked_models_connect()
        commands_act_as_themselves()
