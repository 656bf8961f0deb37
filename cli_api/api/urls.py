from django.urls import path

from ..views import cli_login_confirm
from .views import (
    AuthCallbackApi,
    AuthLogoutApi,
    AuthPollApi,
    AuthStartApi,
    CliExplainApi,
    CliLogsApi,
    CliTestEventApi,
    ProgramInitApi,
    ProgramsListApi,
    ProgramStatusApi,
    WebhookEventsListApi,
    WebhookEventTriggerApi,
)

urlpatterns = [
    path("api/v1/cli/auth/start", AuthStartApi.as_view(), name="cli-auth-start"),
    path("api/v1/cli/auth/callback", AuthCallbackApi.as_view(), name="cli-auth-callback"),
    path("api/v1/cli/auth/poll", AuthPollApi.as_view(), name="cli-auth-poll"),
    path("api/v1/cli/auth/logout", AuthLogoutApi.as_view(), name="cli-auth-logout"),
    path("api/v1/cli/init", ProgramInitApi.as_view(), name="cli-init"),
    path("api/v1/cli/programs", ProgramsListApi.as_view(), name="cli-programs"),
    path("api/v1/cli/status", ProgramStatusApi.as_view(), name="cli-status"),
    path("api/v1/cli/test-event", CliTestEventApi.as_view(), name="cli-test-event"),
    path("api/v1/cli/logs", CliLogsApi.as_view(), name="cli-logs"),
    path("api/v1/cli/explain", CliExplainApi.as_view(), name="cli-explain"),
    path(
        "api/v1/cli/programs/<id:program_id>/webhook-events",
        WebhookEventsListApi.as_view(),
        name="cli-webhook-events",
    ),
    path(
        "api/v1/cli/programs/<id:program_id>/webhook-events/trigger",
        WebhookEventTriggerApi.as_view(),
        name="cli-webhook-trigger",
    ),
    # The browser side of `svc login`: sign in (dashboard session), then confirm.
    path("cli/login", cli_login_confirm, name="cli-login-confirm"),
]
