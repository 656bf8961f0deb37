import secrets
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from programs.management.commands.demo import default_base_url
from programs.models import Program
from tracking.models import ProcessorEvent, SaleEvent
from tracking.stripe.trigger import (
    TRIGGER_EVENT_TYPES,
    TriggerPayment,
    charge_refunded,
    checkout_session,
    event_of,
    invoice,
    processor_event_wait,
    stripe_event_send,
    stripe_local_account_connect,
)

NO_SECRET = (
    "STRIPE_WEBHOOK_SECRET is not set, and the server refuses every Stripe event without it. For a local try, put "
    "any value in .env (read by the server and by this command), e.g. STRIPE_WEBHOOK_SECRET=whsec_local_test, "
    "and restart the server"
)


class Command(BaseCommand):
    help = (
        "Sends a signed test Stripe event to this server's /webhooks/stripe, as Stripe would for a program's "
        "connected account, and prints what the server made of it. Signed with STRIPE_WEBHOOK_SECRET; nothing "
        "reaches Stripe."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("event_type", choices=TRIGGER_EVENT_TYPES)
        parser.add_argument("--program", type=int, required=True, metavar="ID", help="The program the payment is for")
        parser.add_argument(
            "--connect-local",
            action="store_true",
            help="A program with no Stripe account gets a made-up local one (acct_local_…) first",
        )
        parser.add_argument("--click-id", default="", help="Attribute by this click (metadata svc_click_id)")
        parser.add_argument("--customer-key", default="", help="Attribute by this key (metadata svc_customer_key)")
        parser.add_argument("--email", default="buyer@example.com", help="The buyer's email (matched against leads)")
        parser.add_argument(
            "--stripe-customer", default="cus_local_buyer", help="The Stripe customer id (renewals are matched by it)"
        )
        parser.add_argument(
            "--amount", type=int, default=None, help="Minor units: paid (default 4900), or refunded (default: all)"
        )
        parser.add_argument("--currency", default="usd")
        parser.add_argument(
            "--payment-intent",
            default="",
            metavar="PI",
            help="The payment's id (default: a new pi_local_…); charge.refunded: the payment to refund",
        )
        parser.add_argument("--subscription", default="sub_local_test", help="invoice.payment_succeeded only")
        parser.add_argument(
            "--renewal", action="store_true", help="invoice.payment_succeeded: a renewal (subscription_cycle)"
        )
        parser.add_argument("--test", action="store_true", help="livemode: false (a test payment, no commission)")
        parser.add_argument(
            "--base-url",
            default=None,
            help="The server (default: PUBLIC_BASE_URL, else the address `make run` serves on)",
        )
        parser.add_argument(
            "--wait", type=float, default=10, metavar="SECONDS", help="How long to wait for a worker's processing"
        )

    def handle(self, *args: Any, event_type: str, **options: Any) -> None:
        secret = settings.STRIPE_WEBHOOK_SECRET
        if not secret:
            raise CommandError(NO_SECRET)
        program = Program.objects.filter(pk=options["program"]).first()
        if program is None:
            raise CommandError(f"Program {options['program']} does not exist")
        if not program.stripe_account_id:
            if not options["connect_local"]:
                raise CommandError(
                    f"Program {program.pk} is not connected to a Stripe account, so the server would ignore the "
                    f"event. Connect it on /programs/{program.pk}/stripe, or add --connect-local to connect it to "
                    "a made-up local account for trying"
                )
            stripe_local_account_connect(program=program)
            self.stdout.write(f"Program #{program.pk} connected to the local account {program.stripe_account_id}")
        if options["amount"] is not None and options["amount"] <= 0:
            raise CommandError("--amount must be a positive number of minor units")

        payment_intent = options["payment_intent"] or f"pi_local_{secrets.token_hex(8)}"
        obj = self.event_object(event_type, program, payment_intent, options)
        event = event_of(event_type, obj, account=program.stripe_account_id, livemode=not options["test"])
        base = (options["base_url"] or default_base_url()).rstrip("/")
        url = f"{base}/webhooks/stripe"
        try:
            sent = stripe_event_send(url=url, event=event, secret=secret)
        except httpx.TransportError as error:
            raise CommandError(f"Could not reach {url} ({error}): is the server running?") from None
        self.stdout.write(f"Sent {event_type} {event['id']} for program #{program.pk} to {url}: {sent.status}")
        if sent.status != 200:
            hint = (
                " The server's STRIPE_WEBHOOK_SECRET differs from this command's: both read it from the environment "
                "or .env."
                if "signature" in sent.body.lower()
                else ""
            )
            raise CommandError(f"The server refused the event: {sent.status} {sent.body}.{hint}")

        stored = processor_event_wait(event_id=event["id"], seconds=options["wait"])
        if stored is None:
            self.stdout.write(
                "The server acknowledged it; its database is not this one, so see admin → Processor events"
            )
        elif stored.status == ProcessorEvent.Status.RECEIVED:
            self.stdout.write("Stored, not processed yet: is a Celery worker running? (admin → Processor events)")
        else:
            self.stdout.write(f"{stored.get_status_display()}: {stored.outcome or stored.last_error}")
        if event_type != "charge.refunded":
            self.stdout.write(
                f"Payment {payment_intent}; refund it with: manage.py stripe_trigger charge.refunded "
                f"--program {program.pk} --payment-intent {payment_intent}"
            )

    def event_object(
        self, event_type: str, program: Program, payment_intent: str, options: dict[str, Any]
    ) -> dict[str, Any]:
        if event_type == "charge.refunded":
            if not options["payment_intent"]:
                raise CommandError("charge.refunded needs --payment-intent: the id of the payment to refund")
            sale = SaleEvent.objects.filter(program=program, processor_event_id=payment_intent).first()
            if sale is None:
                raise CommandError(
                    f"Program {program.pk} has no sale with the payment id {payment_intent}: send "
                    "checkout.session.completed first (it prints the id)"
                )
            refunded = options["amount"] if options["amount"] is not None else sale.amount_cents
            return charge_refunded(payment_intent=payment_intent, charged=sale.amount_cents, refunded=refunded)
        payment = TriggerPayment(
            amount=options["amount"] if options["amount"] is not None else 4900,
            currency=options["currency"].lower(),
            payment_intent=payment_intent,
            click_id=options["click_id"],
            customer_key=options["customer_key"],
            email=options["email"],
            stripe_customer=options["stripe_customer"],
        )
        if event_type == "invoice.payment_succeeded":
            return invoice(payment, subscription=options["subscription"], renewal=options["renewal"])
        return checkout_session(payment)
