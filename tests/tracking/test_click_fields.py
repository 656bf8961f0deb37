"""ClickFields carries a click's columns from its decision to its insert (tracking.services.click): every column of
the click's row but its id and its customer's part, built into the row as the model's own constructor builds it."""

import dataclasses

import pytest
from django.utils import timezone

from tests.factories import CustomerFactory
from tracking.models import ClickEvent
from tracking.services.click import ClickFields

pytestmark = pytest.mark.django_db


def fields_of(link) -> ClickFields:
    now = timezone.now()
    return ClickFields(
        program_id=link.program_id,
        partner_id=link.partner_id,
        link_id=link.pk,
        session_id="s1",
        page_url="https://shop.example.com/p",
        page_title="A page",
        referrer_url="https://news.example.com/",
        user_agent="Mozilla/5.0",
        screen_resolution="1920x1080",
        viewport_size="1280x720",
        language="en-US",
        timezone="Europe/Paris",
        geo_country="FR",
        geo_region="IDF",
        geo_city="Paris",
        device_type="desktop",
        device_os="Windows",
        browser_name="Chrome",
        is_test=False,
        click_timestamp=now,
        created_at=now,
        traffic="",
        flags=["paid_ads"],
        visitor_hash="0" * 32,
    )


def test_it_names_every_column_of_the_click_but_its_id_and_customer():
    columns = {field.attname for field in ClickEvent._meta.concrete_fields}
    named = {field.name for field in dataclasses.fields(ClickFields)}
    assert named == columns - {"id", "customer_id", "click_id"}


def test_its_row_is_the_one_the_keyword_constructor_builds(link):
    fields = fields_of(link)
    customer = CustomerFactory(link=link)
    built = fields.event(click_id=customer.click_id, customer=customer)
    by_keywords = ClickEvent(**dataclasses.asdict(fields), click_id=customer.click_id, customer=customer)
    columns = [field.attname for field in ClickEvent._meta.concrete_fields]
    assert [getattr(built, name) for name in columns] == [getattr(by_keywords, name) for name in columns]
    assert built.customer is customer and built._state.adding and built.pk is None
    built.save()
    assert ClickEvent.objects.get().customer_id == customer.pk


def test_a_row_without_its_customer_has_none_yet(link):
    built = fields_of(link).event(click_id="cust_1")
    assert (built.customer_id, built.click_id) == (None, "cust_1")
