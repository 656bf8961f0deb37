"""fraud.rules' pure functions and fraud.config's settings: each rule decides alone, and a program's settings
change only through rule_update / rule_reset, which refuse bad input and change nothing then."""

import re

import pytest

from core import messages
from core.errors import BadRequestError
from fraud import config
from fraud.config import default_rules, program_rules, program_rules_read, rule_reset, rule_update
from fraud.models import RuleSetting
from fraud.rules import (
    THRESHOLD_RANGE,
    WINDOW_RANGE,
    Action,
    Rule,
    Traffic,
    ad_click_ids,
    address_normalised,
    agent_judged,
    is_disposable,
    over_threshold,
    registrable_domain,
    request_traffic,
    self_referral,
    user_agent_normalised,
    visitor_hash,
)
from tests.factories import ProgramFactory
from tracking.enrichment import BOT_DEVICE, device_for_user_agent

from .flow import CHROME_UA, FIREFOX_UA, GOOGLEBOT_UA

SLACKBOT_UA = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
FACEBOOK_UA = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"


class TestVisitorHash:
    def test_it_is_stable_and_32_hex_characters(self):
        first = visitor_hash(ip="203.0.113.7", user_agent=CHROME_UA)
        assert first == visitor_hash(ip="203.0.113.7", user_agent=CHROME_UA)
        assert re.fullmatch(r"[0-9a-f]{32}", first)

    def test_it_differs_by_ip_and_by_user_agent(self):
        base = visitor_hash(ip="203.0.113.7", user_agent=CHROME_UA)
        assert visitor_hash(ip="203.0.113.8", user_agent=CHROME_UA) != base
        assert visitor_hash(ip="203.0.113.7", user_agent=FIREFOX_UA) != base

    def test_it_does_not_contain_the_ip(self):
        hashed = visitor_hash(ip="10.0.0.1", user_agent="")
        assert "10.0.0.1" not in hashed and "10001" not in hashed

    def test_cosmetic_changes_to_the_user_agent_hash_the_same(self):
        base = visitor_hash(ip="203.0.113.7", user_agent=CHROME_UA)
        for variant in (CHROME_UA.replace(" ", "  "), CHROME_UA.upper(), f"{CHROME_UA};", f" {CHROME_UA} ;, "):
            assert visitor_hash(ip="203.0.113.7", user_agent=variant) == base

    def test_the_normalised_user_agent(self):
        assert user_agent_normalised("Mozilla/5.0  (X11 ;  Linux)  Gecko/1 ;") == "mozilla/5.0(x11;linux)gecko/1"
        assert user_agent_normalised("") == ""
        assert user_agent_normalised(" ; ") == ""
        assert user_agent_normalised('"Mozilla/5.0 (X11)."') == "mozilla/5.0(x11)"

    def test_ip_and_user_agent_cannot_be_shifted_into_each_other(self):
        assert visitor_hash(ip="1.2.3.4", user_agent="5 agent") != visitor_hash(ip="1.2.3.45", user_agent=" agent")


def traffic_of(user_agent: str = CHROME_UA, method: str = "POST", **meta: str) -> str:
    is_bot = device_for_user_agent(user_agent).device_type == BOT_DEVICE
    return request_traffic(method=method, meta=meta, is_bot_agent=is_bot)


class TestRequestTraffic:
    def test_a_head_request_is_a_prefetch(self):
        assert traffic_of(method="HEAD") == Traffic.PREFETCH

    @pytest.mark.parametrize(
        ("header", "value"),
        [
            ("HTTP_SEC_PURPOSE", "prefetch"),
            ("HTTP_SEC_PURPOSE", "prefetch;prerender"),
            ("HTTP_SEC_PURPOSE", "Prefetch"),
            ("HTTP_PURPOSE", "prefetch"),
            ("HTTP_X_PURPOSE", "preview"),
            ("HTTP_X_MOZ", "prefetch"),
        ],
    )
    def test_a_speculative_request_is_a_prefetch(self, header, value):
        assert traffic_of(**{header: value}) == Traffic.PREFETCH

    def test_an_unrelated_purpose_value_is_human(self):
        assert traffic_of(HTTP_SEC_PURPOSE="") == Traffic.HUMAN
        assert traffic_of(HTTP_PURPOSE="navigate") == Traffic.HUMAN

    @pytest.mark.parametrize("user_agent", [GOOGLEBOT_UA, SLACKBOT_UA, FACEBOOK_UA])
    def test_a_crawlers_user_agent_is_a_bot(self, user_agent):
        assert traffic_of(user_agent) == Traffic.BOT

    def test_a_prefetch_by_a_bot_is_a_prefetch(self):
        assert traffic_of(GOOGLEBOT_UA, method="HEAD") == Traffic.PREFETCH

    @pytest.mark.parametrize("user_agent", [CHROME_UA, FIREFOX_UA, ""])
    def test_a_browser_or_an_empty_user_agent_is_human(self, user_agent):
        assert traffic_of(user_agent) == Traffic.HUMAN


class TestAgentJudged:
    @pytest.mark.parametrize(
        "user_agent",
        [
            "Python-urllib/3.11",
            "Java/17",
            "python-requests/2.31.0",
            "okhttp/4.12.0",
            "curl/8.4.0",
            "Go-http-client/1.1",
            "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)",
            "axios/1.6.2",
            "Apache-HttpClient/4.5.14 (Java/17.0.2)",
        ],
    )
    def test_an_http_clients_name_in_the_header_is_not_judged(self, user_agent):
        assert not agent_judged(user_agent=user_agent, from_body=False)
        assert agent_judged(user_agent=user_agent, from_body=True)

    @pytest.mark.parametrize("user_agent", [GOOGLEBOT_UA, CHROME_UA, "MOZILLA/5.0 (compatible; bingbot/2.0)"])
    def test_a_browsers_or_a_rendering_crawlers_header_is_judged(self, user_agent):
        assert agent_judged(user_agent=user_agent, from_body=False)


class TestAddressNormalised:
    @pytest.mark.parametrize(
        ("email", "normalised"),
        [
            (" John.SmithX+x@GMAIL.com ", "johnsmithx@gmail.com"),
            ("j.smith@googlemail.com", "jsmith@gmail.com"),
            ("a.b+news@outlook.com", "a.b@outlook.com"),
            ("A.B@Hotmail.co.uk", "a.b@hotmail.co.uk"),
            ("base-shop@yahoo.com", "base@yahoo.com"),
            ("base-shop@ymail.com", "base@ymail.com"),
            ("me+x@mac.com", "me@icloud.com"),
            ("me@me.com", "me@icloud.com"),
            ("j.o-h_n+x@pm.me", "john@proton.me"),
            ("john@protonmail.ch", "john@proton.me"),
            ("ivan+shop@ya.ru", "ivan@yandex.ru"),
            ("ivan.petrov@yandex.com", "ivan.petrov@yandex.ru"),
            ("first.last+tag@company.example", "first.last@company.example"),
            ("first-last@company.example", "first-last@company.example"),
            ("+x@gmail.com", "+x@gmail.com"),
            ("no-at-sign", "no-at-sign"),
        ],
    )
    def test_each_providers_rules(self, email, normalised):
        assert address_normalised(email) == normalised


class TestRegistrableDomain:
    @pytest.mark.parametrize(
        ("domain", "registrable"),
        [
            ("mail.acme-x.com", "acme-x.com"),
            ("acme-x.com", "acme-x.com"),
            ("a.b.example.co.uk", "example.co.uk"),
            ("alice.github.io", "alice.github.io"),
            ("co.uk", "co.uk"),
            ("localhost", "localhost"),
        ],
    )
    def test_by_the_public_suffix_list(self, domain, registrable):
        assert registrable_domain(domain) == registrable


class TestAdClickIds:
    @pytest.mark.parametrize(
        "name",
        ["gclid", "gbraid", "wbraid", "dclid", "fbclid", "msclkid", "ttclid", "twclid", "li_fat_id", "yclid", "epik"],
    )
    def test_each_ad_networks_click_id_is_found(self, name):
        assert ad_click_ids({name: ["abc"], "aff": ["code"]}) == [name]

    def test_names_are_matched_in_any_case_and_reported_lower_case(self):
        assert ad_click_ids({"GCLID": ["abc"], "ScCid": ["x"]}) == ["gclid", "sccid"]

    def test_several_are_sorted(self):
        assert ad_click_ids({"msclkid": ["1"], "fbclid": ["2"], "gclid": ["3"]}) == ["fbclid", "gclid", "msclkid"]

    def test_empty_values_and_other_parameters_are_ignored(self):
        assert ad_click_ids({"gclid": [""], "fbclid": [], "utm_source": ["google"], "aff": ["x"]}) == []


class TestSelfReferral:
    def test_the_same_email_in_any_case_fires(self):
        reason = self_referral(customer_email=" Pat@PartnerCo.com ", partner_email="pat@partnerco.com")
        assert reason == "the customer's email is the partner's"

    def test_the_same_company_domain_fires(self):
        reason = self_referral(customer_email="buyer@partnerco.com", partner_email="pat@PartnerCo.com")
        assert reason == "the customer's email domain partnerco.com is the partner's"

    def test_the_same_free_domain_does_not_fire(self):
        assert self_referral(customer_email="someone@gmail.com", partner_email="pat@gmail.com") is None

    def test_the_same_free_address_fires(self):
        assert self_referral(customer_email="pat@gmail.com", partner_email="pat@gmail.com") is not None

    def test_a_disposable_domain_fires_whoever_the_partner_is(self):
        reason = self_referral(customer_email="x@mailinator.com", partner_email="pat@partnerco.com")
        assert reason == "the customer's email domain mailinator.com is a disposable one"
        assert self_referral(customer_email="x@mailinator.com", partner_email="") is not None

    def test_a_subdomain_of_a_disposable_domain_fires(self):
        assert is_disposable("eu.mailinator.com")
        assert self_referral(customer_email="x@eu.mailinator.com", partner_email="pat@partnerco.com") is not None

    def test_a_public_suffix_alone_is_not_disposable(self):
        assert not is_disposable("com")
        assert not is_disposable("example.com")

    def test_the_same_address_after_normalisation_fires_and_says_so(self):
        reason = self_referral(customer_email="John.SmithX+x@GMAIL.com", partner_email="johnsmithx@googlemail.com")
        assert (
            reason
            == "the customer's email is the partner's: the same address after normalisation (johnsmithx@gmail.com)"
        )

    def test_the_same_registrable_company_domain_fires_and_says_so(self):
        reason = self_referral(customer_email="boss@mail.acme-x.com", partner_email="boss@acme-x.com")
        assert reason == (
            "the customer's email domain mail.acme-x.com and the partner's (acme-x.com) are the same registrable "
            "domain acme-x.com"
        )

    @pytest.mark.parametrize(
        ("customer", "partner"),
        [
            ("jane@gmail.com", "john@gmail.com"),
            ("jane@googlemail.com", "john@gmail.com"),
            ("x@mail.yahoo.com", "y@yahoo.com"),
            ("a@shop.co.uk", "b@other.co.uk"),
            ("a@alice.github.io", "b@bob.github.io"),
        ],
    )
    def test_strangers_do_not_fire(self, customer, partner):
        assert self_referral(customer_email=customer, partner_email=partner) is None

    def test_unrelated_emails_do_not_fire(self):
        assert self_referral(customer_email="buyer@othershop.com", partner_email="pat@partnerco.com") is None

    @pytest.mark.parametrize(
        ("customer_email", "partner_email"),
        [("", "pat@partnerco.com"), ("   ", "pat@partnerco.com"), ("", ""), ("buyer@othershop.com", "")],
    )
    def test_empty_emails_do_not_fire(self, customer_email, partner_email):
        assert self_referral(customer_email=customer_email, partner_email=partner_email) is None

    def test_an_address_without_a_domain_only_matches_itself(self):
        assert self_referral(customer_email="nobody", partner_email="pat@partnerco.com") is None


class TestOverThreshold:
    @pytest.mark.parametrize(
        ("count", "threshold", "fires"), [(2, 2, False), (3, 2, True), (0, 1, False), (2, 1, True)]
    )
    def test_it_fires_on_more_than_the_threshold(self, count, threshold, fires):
        assert over_threshold(count=count, threshold=threshold) is fires


@pytest.mark.django_db
class TestConfig:
    def test_the_defaults(self):
        rules = program_rules_read(ProgramFactory().pk)
        enabled = {name: (rule.enabled, rule.action) for name, rule in rules.rules.items()}
        assert enabled == {
            Rule.DUPLICATE_CLICK: (True, Action.FLAG),
            Rule.BOT: (True, Action.FLAG),
            Rule.SELF_REFERRAL: (True, Action.HOLD),
            Rule.PAID_ADS: (False, Action.HOLD),
            Rule.SALE_VELOCITY: (False, Action.HOLD),
            Rule.VISITOR_VELOCITY: (False, Action.HOLD),
        }
        assert not any(rule.customised for rule in rules.rules.values())
        assert rules.rules == default_rules()

    def test_an_update_changes_only_what_is_given(self):
        program = ProgramFactory()
        rule_update(program_id=program.pk, rule=Rule.SALE_VELOCITY, enabled=True, threshold=2)
        updated = program_rules_read(program.pk).get(Rule.SALE_VELOCITY)
        assert (updated.enabled, updated.action, updated.threshold, updated.window_minutes) == (
            True,
            Action.HOLD,
            2,
            24 * 60,
        )
        assert updated.customised
        rule_update(program_id=program.pk, rule=Rule.SALE_VELOCITY, action=Action.FLAG)
        again = program_rules_read(program.pk).get(Rule.SALE_VELOCITY)
        assert (again.enabled, again.action, again.threshold) == (True, Action.FLAG, 2)

    def test_settings_are_per_program(self):
        mine, other = ProgramFactory(), ProgramFactory()
        rule_update(program_id=mine.pk, rule=Rule.BOT, enabled=False)
        assert not program_rules(mine.pk).get(Rule.BOT).enabled
        assert program_rules(other.pk).get(Rule.BOT).enabled

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"rule": "nope"}, messages.FRAUD_RULE_UNKNOWN.format(rule="nope")),
            ({"rule": Rule.BOT, "action": "block"}, messages.FRAUD_RULE_ACTION_INVALID),
            ({"rule": Rule.BOT, "threshold": 3}, messages.FRAUD_RULE_NO_THRESHOLD.format(rule=Rule.BOT)),
            (
                {"rule": Rule.SELF_REFERRAL, "window_minutes": 5},
                messages.FRAUD_RULE_NO_WINDOW.format(rule="self_referral"),
            ),
            (
                {"rule": Rule.SALE_VELOCITY, "threshold": 0},
                messages.FRAUD_RULE_THRESHOLD_RANGE.format(low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1]),
            ),
            (
                {"rule": Rule.SALE_VELOCITY, "threshold": THRESHOLD_RANGE[1] + 1},
                messages.FRAUD_RULE_THRESHOLD_RANGE.format(low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1]),
            ),
            (
                {"rule": Rule.DUPLICATE_CLICK, "window_minutes": 0},
                messages.FRAUD_RULE_WINDOW_RANGE.format(low=WINDOW_RANGE[0], high=WINDOW_RANGE[1]),
            ),
            (
                {"rule": Rule.VISITOR_VELOCITY, "window_minutes": WINDOW_RANGE[1] + 1},
                messages.FRAUD_RULE_WINDOW_RANGE.format(low=WINDOW_RANGE[0], high=WINDOW_RANGE[1]),
            ),
        ],
    )
    def test_bad_input_is_refused_and_changes_nothing(self, change, message):
        program = ProgramFactory()
        before = program_rules_read(program.pk)
        with pytest.raises(BadRequestError) as refused:
            rule_update(program_id=program.pk, enabled=False, **change)
        assert refused.value.message == message
        assert not RuleSetting.objects.exists()
        assert program_rules_read(program.pk) == before

    def test_reset_puts_a_rule_back_on_its_defaults(self):
        program = ProgramFactory()
        rule_update(program_id=program.pk, rule=Rule.DUPLICATE_CLICK, enabled=False, window_minutes=5)
        assert rule_reset(program_id=program.pk, rule=Rule.DUPLICATE_CLICK) == default_rules()[Rule.DUPLICATE_CLICK]
        assert not RuleSetting.objects.exists()
        assert program_rules(program.pk).get(Rule.DUPLICATE_CLICK) == default_rules()[Rule.DUPLICATE_CLICK]

    def test_reset_of_an_unknown_rule_is_refused(self):
        with pytest.raises(BadRequestError):
            rule_reset(program_id=ProgramFactory().pk, rule="nope")

    def test_the_process_cache_serves_reads_and_a_save_clears_it(self, django_assert_num_queries):
        program = ProgramFactory()
        with django_assert_num_queries(1):
            program_rules(program.pk)
            program_rules(program.pk)
        assert program.pk in config._cache
        rule_update(program_id=program.pk, rule=Rule.PAID_ADS, enabled=True)
        assert program.pk not in config._cache
        assert program_rules(program.pk).get(Rule.PAID_ADS).enabled

    def test_saving_or_deleting_a_setting_outside_rule_update_clears_the_cache_too(self):
        program = ProgramFactory()
        assert not program_rules(program.pk).get(Rule.PAID_ADS).enabled
        setting = RuleSetting.objects.create(program=program, rule=Rule.PAID_ADS, enabled=True, action=Action.FLAG)
        assert program_rules(program.pk).get(Rule.PAID_ADS).enabled
        setting.delete()
        assert not program_rules(program.pk).get(Rule.PAID_ADS).enabled
