import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger

from core import worker_limits
from core.logging import handlers_redact

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("svc")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The worker's own log handlers redact what they write, as the web process's do (core.redaction).
after_setup_logger.connect(handlers_redact)
after_setup_task_logger.connect(handlers_redact)
# Soft time limits stop the task they were set for, never an idle process after a broker reconnect.
worker_limits.install()
