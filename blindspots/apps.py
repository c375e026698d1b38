from django.apps import AppConfig


class BlindspotsConfig(AppConfig):
    name = "blindspots"
    verbose_name = "Blind spots"
