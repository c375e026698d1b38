from __future__ import annotations

import os

from fleetscope.env import exit_on_config_error

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleetscope.settings")

with exit_on_config_error():
    from django.core.wsgi import get_wsgi_application

    application = get_wsgi_application()
