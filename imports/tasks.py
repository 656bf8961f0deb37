from core.tasks import service_task

from .engine import unconfirmed_uploads_prune, upload_run

# An import of a hundred thousand rows takes minutes, longer than the project's default task limits. A retry (the
# shared policy) resumes the run after its last whole batch.


@service_task("imports.import_run", soft_time_limit=3300, time_limit=3600)
def upload_import_task(upload_id: int) -> str:
    return upload_run(upload_id=upload_id)


@service_task("imports.prune_uploads")
def unconfirmed_uploads_prune_task() -> int:
    return unconfirmed_uploads_prune()
