from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.utils import timezone

from commissions.approval import commission_approve
from commissions.models import Commission
from programs.keys import generate_key
from programs.models import (
    Membership,
    Partner,
    PartnerProgram,
    Program,
    ProgramKey,
    ReferralLink,
    Role,
    Workspace,
)
from programs.services import program_key_regenerate
from tracking.models import Customer, SaleEvent
from webhooks.events import endpoints_changed
from webhooks.models import WebhookEndpoint
from webhooks.signing import secret_encrypt, secret_generate


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "pass-word-123")

    @factory.post_generation
    def persist(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class WorkspaceFactory(factory.django.DjangoModelFactory[Workspace]):
    class Meta:
        model = Workspace

    name = factory.Sequence(lambda n: f"Workspace {n}")


class MembershipFactory(factory.django.DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.OWNER


class ProgramFactory(factory.django.DjangoModelFactory[Program]):
    """A program with live and test keys. The raw keys are on `program.raw_api_key` / `raw_test_api_key`."""

    class Meta:
        model = Program
        skip_postgeneration_save = True

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"Program {n}")
    domain = factory.Sequence(lambda n: f"shop{n}.example.com")
    commission_type = "percent"
    commission_rate = Decimal("20")
    cookie_duration = 30
    hold_days = 30

    @factory.post_generation
    def keys(obj, create, extracted, **kwargs):
        if create:
            obj.raw_api_key = program_key_regenerate(program=obj, mode=ProgramKey.Mode.LIVE)
            obj.raw_test_api_key = program_key_regenerate(program=obj, mode=ProgramKey.Mode.TEST)


class PartnerFactory(factory.django.DjangoModelFactory[Partner]):
    class Meta:
        model = Partner

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"Partner {n}")
    email = factory.LazyAttribute(lambda o: f"{o.name.lower().replace(' ', '')}@example.com")


class PartnerProgramFactory(factory.django.DjangoModelFactory[PartnerProgram]):
    class Meta:
        model = PartnerProgram

    program = factory.SubFactory(ProgramFactory)
    # A partner of the program's workspace: an enrolment never ties two workspaces (programs.models.same_workspace).
    partner = factory.SubFactory(PartnerFactory, workspace=factory.SelfAttribute("..program.workspace"))


class ReferralLinkFactory(factory.django.DjangoModelFactory[ReferralLink]):
    class Meta:
        model = ReferralLink
        skip_postgeneration_save = True

    short_link = factory.Sequence(lambda n: f"code{n}")
    program = factory.SubFactory(ProgramFactory)
    partner = factory.SubFactory(PartnerFactory, workspace=factory.SelfAttribute("..program.workspace"))
    is_active = True

    @factory.post_generation
    def enrolment(obj, create, extracted, **kwargs):
        if create and obj.partner_id and obj.program_id:
            PartnerProgram.objects.get_or_create(partner=obj.partner, program=obj.program)


def legacy_key() -> str:
    return generate_key("")


class CustomerFactory(factory.django.DjangoModelFactory[Customer]):
    """A clicked customer of a link's program, first partner = the link's partner."""

    class Meta:
        model = "tracking.Customer"

    class Params:
        link = factory.SubFactory(ReferralLinkFactory)

    program = factory.SelfAttribute("link.program")
    first_partner = factory.SelfAttribute("link.partner")
    first_link = factory.SelfAttribute("link")
    click_id = factory.Sequence(lambda n: f"cust_test_{n}")
    customer_status = "click"


class SaleFactory(factory.django.DjangoModelFactory[SaleEvent]):
    class Meta:
        model = "tracking.SaleEvent"

    customer = factory.SubFactory(CustomerFactory)
    program = factory.SelfAttribute("customer.program")
    partner = factory.SelfAttribute("customer.first_partner")
    click_id = factory.SelfAttribute("customer.click_id")
    processor_event_id = factory.Sequence(lambda n: f"txn_{n}")
    amount_cents = 10000
    currency = "USD"


class CommissionFactory(factory.django.DjangoModelFactory[Commission]):
    """A pending commission on a sale (20% by default)."""

    class Meta:
        model = "commissions.Commission"

    sale = factory.SubFactory(SaleFactory)
    program = factory.SelfAttribute("sale.program")
    partner = factory.SelfAttribute("sale.partner")
    customer = factory.SelfAttribute("sale.customer")
    amount_cents = factory.LazyAttribute(lambda o: o.sale.amount_cents // 5)
    currency = factory.SelfAttribute("sale.currency")
    status = "pending"
    hold_until = factory.LazyFunction(timezone.now)


def credited_commission(amount: int = 10000, commission: int = 2000) -> Commission:
    """A commission approved through the service, so its credit is in the partner's ledger."""
    made = CommissionFactory.create(
        sale=SaleFactory(amount_cents=amount), amount_cents=commission, hold_until=timezone.now()
    )
    assert commission_approve(commission_id=made.pk)
    made.refresh_from_db()
    return made


class WebhookEndpointFactory(factory.django.DjangoModelFactory[WebhookEndpoint]):
    """An endpoint for a program, every event type, with a known secret (`endpoint.secret_for_tests`)."""

    class Meta:
        model = WebhookEndpoint

    program = factory.SubFactory(ProgramFactory)
    workspace = factory.LazyAttribute(lambda endpoint: endpoint.program.workspace)
    url = "https://hooks.example.com/svc"
    event_types = factory.LazyFunction(lambda: ["*"])

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        secret = kwargs.pop("secret", None) or secret_generate()
        kwargs.setdefault("secret_encrypted", secret_encrypt(secret))
        kwargs.setdefault("secret_last4", secret[-4:])
        endpoint = super()._create(model_class, *args, **kwargs)
        endpoint.secret_for_tests = secret
        endpoints_changed()  # as webhooks.services does when it makes one
        return endpoint
