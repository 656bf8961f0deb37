from core.tasks import service_task

from .services import login_sessions_purge


@service_task("cli_api.purge_login_sessions")
def login_sessions_purge_task() -> int:
    return login_sessions_purge()
