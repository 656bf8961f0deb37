from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Partner portal"

    def ready(self) -> None:
        from commissions.followers import approval_job_followers, status_followers

        from .emails import commission_email_later, commission_emails_catch_up

        # The partner's emails when a commission is approved, refunded or reversed (commissions imports no portal).
        if commission_email_later not in status_followers:
            status_followers.append(commission_email_later)
        if commission_emails_catch_up not in approval_job_followers:
            approval_job_followers.append(commission_emails_catch_up)
