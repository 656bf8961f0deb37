"""OpenAPI: how program-key authentication appears in the generated description (registered by ProgramsConfig)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from programs.api import auth


class ProgramKeyScheme(OpenApiAuthenticationExtension):
    target_class = "programs.api.auth.ProgramKeyAuthentication"
    name = "programKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "Program API key (`aff_…`; legacy keys without the prefix still work). "
                "Test keys (`aff_test_…`) make every call test mode."
            ),
        }

    def get_security_requirement(self, auto_schema):
        # Click never needs the key and lead works without one (browser mode): both also accept no credential.
        if getattr(auto_schema.view, "program_key_mode", auth.REQUIRED) != auth.REQUIRED:
            return [{self.name: []}, {}]
        return {self.name: []}
