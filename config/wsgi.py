import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# What a worker would otherwise build during its first clicks: the user-agent resolver's compiled regexes.
from tracking.enrichment import user_agent_resolver_warm  # noqa: E402  (needs the app registry loaded above)

user_agent_resolver_warm()
