"""referral_link_create and referral_link_deactivate: only enrolled partners get links, codes are unique, and
turning a link off reaches tracking's link cache at once."""

import re

import pytest

from programs.models import PartnerProgram, ReferralLink
from programs.services import (
    PartnerNotEnrolled,
    ShortLinkInvalid,
    ShortLinkTaken,
    referral_link_create,
    referral_link_deactivate,
    short_link_generate,
)
from tests.factories import PartnerFactory, ProgramFactory, ReferralLinkFactory
from tracking import link_cache

pytestmark = pytest.mark.django_db


@pytest.fixture
def enrolment():
    program = ProgramFactory.create()
    partner = PartnerFactory.create(workspace=program.workspace, name="Grace Hopper")
    return PartnerProgram.objects.create(partner=partner, program=program)


def test_it_creates_an_active_link(enrolment):
    link = referral_link_create(program=enrolment.program, partner=enrolment.partner, short_link="grace")
    assert (link.short_link, link.is_active, link.is_synthetic) == ("grace", True, False)
    assert (link.program, link.partner) == (enrolment.program, enrolment.partner)


def test_it_refuses_a_partner_not_enrolled_or_of_another_workspace(enrolment):
    loose = PartnerFactory.create(workspace=enrolment.program.workspace)
    with pytest.raises(PartnerNotEnrolled):
        referral_link_create(program=enrolment.program, partner=loose)
    foreign = PartnerFactory.create()
    with pytest.raises(PartnerNotEnrolled):
        referral_link_create(program=enrolment.program, partner=foreign)
    assert not ReferralLink.objects.exists()


@pytest.mark.parametrize("code", ["", "x" * 101, "a b", "a/b", "ü", "a\n"])
def test_it_refuses_a_malformed_code(enrolment, code):
    with pytest.raises(ShortLinkInvalid):
        referral_link_create(program=enrolment.program, partner=enrolment.partner, short_link=code)


def test_a_taken_code_raises_and_leaves_the_transaction_usable(enrolment):
    ReferralLinkFactory.create(short_link="grace")
    with pytest.raises(ShortLinkTaken):
        referral_link_create(program=enrolment.program, partner=enrolment.partner, short_link="grace")
    assert ReferralLink.objects.count() == 1  # a query still runs: the savepoint kept the transaction alive


def test_a_generated_code_is_a_slug_of_the_name_with_a_suffix(enrolment):
    assert re.fullmatch(r"grace-hopper-[0-9a-f]{6}", short_link_generate(enrolment.partner))
    assert re.fullmatch(r"link-[0-9a-f]{6}", short_link_generate(PartnerFactory.build(name="日本")))
    assert len(short_link_generate(PartnerFactory.build(name="x" * 200))) <= 100


def test_deactivating_is_true_once_then_false_and_clears_the_link_cache(enrolment):
    link = referral_link_create(program=enrolment.program, partner=enrolment.partner, short_link="grace")

    def active() -> bool:
        target = link_cache.link_target_get("grace")
        assert target is not None
        return target.is_active

    assert active()  # now cached
    assert referral_link_deactivate(link_id=link.pk) is True
    assert not active()
    assert referral_link_deactivate(link_id=link.pk) is False
