"""Connecting a program to its Stripe account with Stripe Connect OAuth, through the stripe library."""

import logging

import stripe
from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils import timezone

from core import messages

from .models import Program

logger = logging.getLogger("svc.stripe")

STATE_SALT = "stripe-connect"
STATE_MAX_AGE_SECONDS = 900


class StripeConnectError(Exception):
    """Shown to the signed-in user as is."""


def stripe_connect_configured() -> bool:
    return bool(settings.STRIPE_CLIENT_ID and settings.STRIPE_SECRET_KEY)


def stripe_connect_url(*, program: Program, user_id: int, redirect_uri: str) -> str:
    """The Stripe page where the program owner authorizes us. The signed state ties the answer to this
    program and this user, and expires."""
    if not stripe_connect_configured():
        raise StripeConnectError(messages.STRIPE_CONNECT_NOT_CONFIGURED)
    state = signing.dumps({"program": program.pk, "user": user_id}, salt=STATE_SALT)
    return stripe.OAuth.authorize_url(
        client_id=settings.STRIPE_CLIENT_ID, scope="read_write", state=state, redirect_uri=redirect_uri
    )


def stripe_connect_program_from_state(*, state: str, user_id: int) -> Program:
    try:
        data = signing.loads(state, salt=STATE_SALT, max_age=STATE_MAX_AGE_SECONDS)
    except signing.SignatureExpired:
        raise StripeConnectError(messages.STRIPE_CONNECT_EXPIRED) from None
    except signing.BadSignature:
        raise StripeConnectError(messages.STRIPE_CONNECT_FOREIGN_STATE) from None
    if data.get("user") != user_id:
        raise StripeConnectError(messages.STRIPE_CONNECT_OTHER_USER)
    program = Program.objects.filter(pk=data.get("program")).first()
    if program is None:
        raise StripeConnectError(messages.STRIPE_CONNECT_PROGRAM_GONE)
    return program


def stripe_connect_complete(*, program: Program, code: str) -> str:
    """Exchanges the authorization code for the connected account id and stores it on the program."""
    try:
        token = stripe.OAuth.token(grant_type="authorization_code", code=code, api_key=settings.STRIPE_SECRET_KEY)
    except stripe.StripeError as exc:
        logger.warning("stripe.connect_failed", extra={"program_id": program.pk, "stripe_error": str(exc)})
        raise StripeConnectError(messages.STRIPE_CONNECT_REFUSED.format(reason=exc.user_message or exc)) from None
    account_id: str = token["stripe_user_id"]
    with transaction.atomic():
        taken = Program.objects.select_for_update().filter(stripe_account_id=account_id).exclude(pk=program.pk).first()
        if taken is not None:
            raise StripeConnectError(messages.STRIPE_CONNECT_ACCOUNT_TAKEN.format(program_id=taken.pk))
        Program.objects.filter(pk=program.pk).update(stripe_account_id=account_id, stripe_connected_at=timezone.now())
    program.stripe_account_id = account_id
    return account_id


def stripe_disconnect(*, program: Program) -> None:
    """Revokes our access at Stripe and forgets the account. If Stripe says we were already revoked,
    the program is disconnected all the same."""
    account_id = program.stripe_account_id
    if not account_id:
        return
    try:
        stripe.OAuth.deauthorize(
            client_id=settings.STRIPE_CLIENT_ID, stripe_user_id=account_id, api_key=settings.STRIPE_SECRET_KEY
        )
    except stripe.StripeError as exc:
        logger.warning("stripe.deauthorize_failed", extra={"program_id": program.pk, "stripe_error": str(exc)})
    Program.objects.filter(pk=program.pk).update(stripe_account_id="", stripe_connected_at=None)
    program.stripe_account_id = ""
