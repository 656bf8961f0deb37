"""The owners' sign-in (/accounts/login/) and the admin's (/admin/login/), with core.sign_in_lock: failures are
counted per username whatever the client address, and a locked username is refused, the right password too."""

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.http import HttpResponse

from core.sign_in_lock import DASHBOARD, sign_in_failed, sign_in_lock_seconds_left, sign_in_locked_message


class SignInForm(AuthenticationForm):
    """AuthenticationForm's clean(), refused while the username is locked, and counted when no user has this
    username and password (an unknown username too; not the admin's refusal of a right password for a non-staff
    user)."""

    locked_error = ""

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        if username and self.cleaned_data.get("password"):
            locked = sign_in_lock_seconds_left(DASHBOARD, username)
            if locked:
                self.locked_error = sign_in_locked_message(locked, name="username")
                raise ValidationError(self.locked_error, code="locked")
            try:
                return super().clean()
            except ValidationError:
                if self.user_cache is None:
                    sign_in_failed(self.request, DASHBOARD, username)
                raise
        return super().clean()


class AdminSignInForm(SignInForm, AdminAuthenticationForm):
    pass


class SignInView(LoginView):
    authentication_form = SignInForm

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if getattr(form, "locked_error", ""):
            response.status_code = 429
        return response
