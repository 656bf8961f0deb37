from core.tasks import service_task

from .services import agent_idempotency_records_purge


@service_task("agent_api.purge_idempotency_records")
def agent_idempotency_records_purge_task() -> int:
    return agent_idempotency_records_purge()
