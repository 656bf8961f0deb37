from core.tasks import service_task

from .calllog import api_calls_purge


@service_task("programs.purge_request_log")
def api_calls_purge_task() -> int:
    return api_calls_purge()
