from django.apps import AppConfig


class SloConfig(AppConfig):
    name = "slo"
    verbose_name = "SLOs"
