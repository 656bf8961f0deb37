from django.urls import path

from .views import AgentProgramGetApi, AgentProgramsListApi

# Path ids are matched as text so a malformed one gets the JSON 404 (after the key check), not Django's page.
urlpatterns = [
    path("api/agent/v1/programs", AgentProgramsListApi.as_view(), name="agent-programs"),
    path("api/agent/v1/programs/<str:program_id>", AgentProgramGetApi.as_view(), name="agent-program"),
]
