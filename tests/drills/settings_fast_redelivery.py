"""fleetscope.settings for a drill's Celery worker, with the redelivery of a dead worker's
task cut from minutes to seconds: the hard time limit with it (a task still running is
never delivered twice here either), and workers looking for such tasks every second.
Everything else is production's.
"""

from __future__ import annotations

from fleetscope.lib.redis_settings import RedisTimeouts, celery_transport_options
from fleetscope.settings import *  # noqa: F403
from fleetscope.settings import REDIS_CONNECT_TIMEOUT_SECONDS, REDIS_TIMEOUT_SECONDS

CELERY_TASK_SOFT_TIME_LIMIT = 6
CELERY_TASK_TIME_LIMIT = 8
REDELIVER_AFTER_SECONDS = 10.0
CELERY_BROKER_TRANSPORT_OPTIONS = celery_transport_options(
    RedisTimeouts(REDIS_CONNECT_TIMEOUT_SECONDS, REDIS_TIMEOUT_SECONDS),
    redeliver_after_seconds=REDELIVER_AFTER_SECONDS,
    sweep_seconds=1.0,
)
