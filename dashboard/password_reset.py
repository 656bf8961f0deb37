"""The owners' password reset (/accounts/password_reset/): Django's view and emails, with the work that depends on
the address (finding its user, rendering and sending the email) done by a task queued once the answer is written.
Django's own view sends inside the request, so an address with an account answered later than one without (by the
mail server's latency), which told who has an account."""

from urllib.parse import urlsplit

from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.views import PasswordResetView
from django.http import HttpResponse, HttpResponseRedirect

from core.tasks import enqueue_after_response, service_task
from core.urls import public_url


class OwnerPasswordResetView(PasswordResetView):
    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        base = urlsplit(public_url(self.request, "/"))
        response = HttpResponseRedirect(self.get_success_url())
        enqueue_after_response(
            response, owner_password_reset_email_task, form.cleaned_data["email"], base.netloc, base.scheme == "https"
        )
        return response


def owner_password_reset_email_send(*, email: str, domain: str, use_https: bool) -> None:
    """Django's reset email to every active user with this email and a usable password (none for any other)."""
    form = PasswordResetForm({"email": email})
    if form.is_valid():
        form.save(domain_override=domain, use_https=use_https)


@service_task("dashboard.password_reset_email")
def owner_password_reset_email_task(email: str, domain: str, use_https: bool) -> None:
    owner_password_reset_email_send(email=email, domain=domain, use_https=use_https)
