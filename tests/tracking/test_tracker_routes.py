"""The browser tracker's routes through the HTTP API: GET /js/svc-tracker.js, POST /api/v1/track/visit,
GET /api/v1/track/config, and the CORS answers that let any site call them."""

from pathlib import Path
from unittest import mock

import pytest

from core import messages
from tests.factories import ProgramFactory
from tests.helpers import REQUEST_LOG_ROW, bad_request, platform_error
from tracking.api import tracker
from tracking.models import PageVisit

pytestmark = pytest.mark.django_db

SCRIPT_URL = "/js/svc-tracker.js"
VISIT_URL = "/api/v1/track/visit"
CONFIG_URL = "/api/v1/track/config"
SITE = "https://shop.example.com"
# 7 KB since svc.getDiscount() (issue 40); about 2.5 KB gzipped.
MAX_SCRIPT_BYTES = 7 * 1024


def post_visit(api_client, body, **extra):
    return api_client.post(VISIT_URL, body, format="json", **extra)


@pytest.fixture
def program():
    return ProgramFactory(cookie_duration=45)


@pytest.fixture
def fresh_script():
    # The script is read once per process; tests that count reads start from an empty cache.
    tracker.tracker_script.cache_clear()
    yield
    tracker.tracker_script.cache_clear()


class TestScript:
    def test_it_serves_the_tracker_as_cacheable_javascript(self, client):
        response = client.get(SCRIPT_URL)
        assert response.status_code == 200
        assert response["Content-Type"] == "application/javascript; charset=utf-8"
        assert response["Cache-Control"] == "public, max-age=3600"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response.content == (Path(__file__).resolve().parents[2] / "static/js/svc-tracker.js").read_bytes()

    def test_it_stays_under_7_kb(self, client):
        body = client.get(SCRIPT_URL).content
        assert len(body) < MAX_SCRIPT_BYTES, f"svc-tracker.js is {len(body)} bytes"

    def test_it_names_the_spec_interface(self, client):
        body = client.get(SCRIPT_URL).content.decode()
        for name in ("svc_click_id", "data-svc-", "getClickId", "signup", "/api/v1/track/click", "/api/v1/track/lead"):
            assert name in body, name

    def test_it_sends_a_strong_etag_of_the_content(self, client):
        first = client.get(SCRIPT_URL)["ETag"]
        assert first.startswith('"') and first.endswith('"') and len(first) == 34
        assert client.get(SCRIPT_URL)["ETag"] == first

    @pytest.mark.parametrize("header", ["{etag}", "W/{etag}", '"stale", {etag}', "*"])
    def test_it_answers_304_when_the_browser_has_this_version(self, client, header):
        etag = client.get(SCRIPT_URL)["ETag"]
        response = client.get(SCRIPT_URL, HTTP_IF_NONE_MATCH=header.format(etag=etag))
        assert response.status_code == 304
        assert response.content == b""
        assert response["ETag"] == etag
        assert response["Cache-Control"] == "public, max-age=3600"

    def test_it_sends_the_script_when_the_browser_has_another_version(self, client):
        response = client.get(SCRIPT_URL, HTTP_IF_NONE_MATCH='"an-older-version"')
        assert response.status_code == 200
        assert len(response.content) > 0

    def test_it_answers_head_without_a_body(self, client):
        response = client.head(SCRIPT_URL)
        assert response.status_code == 200
        assert response.content == b""
        assert response["ETag"]

    def test_it_refuses_to_be_posted_to(self, client):
        assert client.post(SCRIPT_URL).status_code == 405

    def test_it_reads_the_file_once(self, client, fresh_script):
        read_bytes = Path.read_bytes
        with mock.patch.object(Path, "read_bytes", autospec=True, side_effect=read_bytes) as reads:
            client.get(SCRIPT_URL)
            client.get(SCRIPT_URL)
            client.get(SCRIPT_URL, HTTP_IF_NONE_MATCH="*")
        assert reads.call_count == 1

    def test_any_site_may_load_it(self, client):
        response = client.get(SCRIPT_URL, HTTP_ORIGIN=SITE)
        assert response["Access-Control-Allow-Origin"] == "*"


class TestVisit:
    def test_it_stores_the_visit_with_its_referrer_domain_and_utm_tags(self, api_client, program):
        page_url = f"{SITE}/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring&aff=summer"
        response = post_visit(
            api_client,
            {
                "program_id": program.pk,
                "click_id": "cust_1_2_abc",
                "session_id": "tab-1",
                "page_url": page_url,
                "page_title": "Pricing",
                "referrer_url": "https://Blog.Example.org:8443/review?x=1",
            },
        )
        assert response.status_code == 200
        visit = PageVisit.objects.get()
        assert response.json() == {"success": True, "visit_id": visit.pk}
        assert visit.program == program
        assert (visit.click_id, visit.session_id) == ("cust_1_2_abc", "tab-1")
        assert (visit.page_url, visit.page_title) == (page_url, "Pricing")
        assert visit.referrer_url == "https://Blog.Example.org:8443/review?x=1"
        assert visit.referrer_domain == "blog.example.org"
        assert (visit.utm_source, visit.utm_medium, visit.utm_campaign) == ("newsletter", "email", "spring")
        assert visit.is_test is False

    def test_it_needs_only_the_program(self, api_client, program):
        response = post_visit(api_client, {"program_id": str(program.pk)})  # numeric strings are accepted
        assert response.status_code == 200
        visit = PageVisit.objects.get()
        assert (visit.program, visit.page_url, visit.click_id, visit.referrer_domain) == (program, "", "", "")
        assert (visit.utm_source, visit.utm_medium, visit.utm_campaign) == ("", "", "")

    def test_it_keeps_the_first_non_empty_utm_value_and_ignores_a_broken_referrer(self, api_client, program):
        post_visit(
            api_client,
            {
                "program_id": program.pk,
                "page_url": f"{SITE}/?utm_source=&utm_source=ads&utm_source=other",
                "referrer_url": "http://[not-an-address/",
            },
        )
        visit = PageVisit.objects.get()
        assert visit.utm_source == "ads"
        assert visit.referrer_domain == ""

    def test_it_flags_a_test_mode_visit(self, api_client, program):
        post_visit(api_client, {"program_id": program.pk, "additional_data": {"test_mode": True}})
        assert PageVisit.objects.get().is_test is True

    def test_it_ignores_any_key_it_is_sent(self, api_client, program):
        response = post_visit(api_client, {"program_id": program.pk}, HTTP_AUTHORIZATION="Bearer not-a-key")
        assert response.status_code == 200

    def test_it_carries_the_request_id_and_rate_limit_headers(self, api_client, program):
        response = post_visit(api_client, {"program_id": program.pk}, HTTP_X_REQUEST_ID="visit-request-1")
        assert response["X-Request-ID"] == "visit-request-1"
        assert response["X-RateLimit-Limit"] == "120"
        assert response["X-RateLimit-Remaining"] == "119"

    def test_it_runs_two_queries(self, api_client, program, django_assert_num_queries):
        # 1. SELECT 1 FROM program WHERE id = … LIMIT 1
        # 2. INSERT page visit
        with django_assert_num_queries(2 + REQUEST_LOG_ROW):
            response = post_visit(api_client, {"program_id": program.pk, "page_url": f"{SITE}/"})
        assert response.status_code == 200

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({}, "program_id is required"),
            ({"program_id": None}, "program_id is required"),
            ({"program_id": " "}, "program_id is required"),
            ({"program_id": 999999}, messages.UNKNOWN_PROGRAM_ID),
            ({"program_id": "abc"}, messages.UNKNOWN_PROGRAM_ID),
            ({"program_id": True}, messages.UNKNOWN_PROGRAM_ID),
            ({"program_id": [1]}, messages.UNKNOWN_PROGRAM_ID),
        ],
    )
    def test_it_refuses_a_missing_or_unknown_program(self, api_client, program, body, message):
        response = post_visit(api_client, body)
        assert response.status_code == 400
        assert response.json() == bad_request(message)
        assert not PageVisit.objects.exists()

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("page_url", 5, "page_url must be a string of at most 4096 characters"),
            ("page_url", "x" * 4097, "page_url must be a string of at most 4096 characters"),
            ("page_title", ["Pricing"], "page_title must be a string of at most 1024 characters"),
            ("referrer_url", {}, "referrer_url must be a string of at most 4096 characters"),
            ("click_id", 12, "click_id must be a string of at most 255 characters"),
            ("session_id", "s" * 256, "session_id must be a string of at most 255 characters"),
            ("additional_data", "test", "additional_data must be an object"),
            ("additional_data", {"test_mode": "yes"}, "additional_data.test_mode must be a boolean"),
        ],
    )
    def test_it_refuses_a_wrongly_typed_field(self, api_client, program, field, value, message):
        response = post_visit(api_client, {"program_id": program.pk, field: value})
        assert response.status_code == 400
        assert response.json() == bad_request(message)
        assert not PageVisit.objects.exists()

    def test_it_refuses_a_body_that_is_not_json(self, api_client, program):
        response = api_client.post(VISIT_URL, "{nope", content_type="application/json")
        assert response.status_code == 400
        assert response.json() == bad_request(messages.MALFORMED_JSON)

    def test_it_answers_get_with_405(self, api_client):
        assert api_client.get(VISIT_URL).status_code == 405

    def test_it_answers_500_visit_tracking_failed_when_the_insert_fails(self, api_client, program):
        with mock.patch("tracking.services.tracker.PageVisit.objects.create", side_effect=RuntimeError("db down")):
            response = post_visit(api_client, {"program_id": program.pk})
        assert response.status_code == 500
        assert response.json() == platform_error(500, "InternalServerError", "Visit tracking failed")
        assert response["X-Request-ID"]

    def test_it_allows_120_a_minute_per_ip_then_answers_429_and_records_nothing(self, api_client, program):
        for _ in range(120):
            assert post_visit(api_client, {"program_id": program.pk}).status_code == 200
        response = post_visit(api_client, {"program_id": program.pk})
        assert response.status_code == 429
        body = response.json()
        assert body["error"]["code"] == "rate_limited"
        assert "data" not in body
        assert response["Retry-After"] == str(body["error"]["retry_after_seconds"])
        assert PageVisit.objects.count() == 120
        other_ip = post_visit(api_client, {"program_id": program.pk}, REMOTE_ADDR="10.9.8.7")
        assert other_ip.status_code == 200


class TestConfig:
    def test_it_answers_what_the_tracker_needs(self, api_client, program):
        response = api_client.get(CONFIG_URL, {"program_id": program.pk})
        assert response.status_code == 200
        assert response.json() == {
            "success": True,
            "program_id": program.pk,
            "cookie_window_days": 45,
            "lead_auth": "browser_allowed",
            "decorate_payment_links": False,
            "link_aliases": [],
        }
        assert response["Cache-Control"] == "private, max-age=300"
        assert response["X-Request-ID"]
        assert response["X-RateLimit-Limit"] == "60"

    def test_it_decorates_payment_links_once_stripe_is_connected(self, api_client):
        program = ProgramFactory(stripe_account_id="acct_123", lead_auth="server_required")
        body = api_client.get(CONFIG_URL, {"program_id": program.pk}).json()
        assert body["decorate_payment_links"] is True
        assert body["lead_auth"] == "server_required"

    def test_it_names_the_programs_link_aliases_in_order(self, api_client):
        program = ProgramFactory(link_aliases=["fpr", "ref"])
        assert api_client.get(CONFIG_URL, {"program_id": program.pk}).json()["link_aliases"] == ["fpr", "ref"]

    def test_it_never_shows_a_key_or_the_stripe_account(self, api_client):
        program = ProgramFactory(stripe_account_id="acct_secretish")
        text = api_client.get(CONFIG_URL, {"program_id": program.pk}).content.decode()
        assert "acct_secretish" not in text
        assert program.raw_api_key not in text

    def test_it_runs_one_query(self, api_client, program, django_assert_num_queries):
        # 1. SELECT id, cookie_duration, lead_auth, stripe_account_id, link_aliases FROM program WHERE id = … LIMIT 1
        with django_assert_num_queries(1 + REQUEST_LOG_ROW):
            assert api_client.get(CONFIG_URL, {"program_id": program.pk}).status_code == 200

    @pytest.mark.parametrize("program_id", ["999999", "abc", "-1"])
    def test_it_answers_404_for_an_unknown_program(self, api_client, program, program_id):
        response = api_client.get(CONFIG_URL, {"program_id": program_id})
        assert response.status_code == 404
        assert response.json() == platform_error(404, "NotFoundError", messages.UNKNOWN_PROGRAM_ID)

    @pytest.mark.parametrize("query", ["", "?program_id=", "?program_id=%20"])
    def test_it_answers_400_without_a_program_id(self, api_client, query):
        response = api_client.get(CONFIG_URL + query)
        assert response.status_code == 400
        assert response.json() == bad_request("program_id is required")

    def test_it_answers_post_with_405(self, api_client):
        assert api_client.post(CONFIG_URL, {}, format="json").status_code == 405

    def test_it_allows_60_a_minute_per_ip_then_answers_429(self, api_client, program):
        for _ in range(60):
            assert api_client.get(CONFIG_URL, {"program_id": program.pk}).status_code == 200
        response = api_client.get(CONFIG_URL, {"program_id": program.pk})
        assert response.status_code == 429
        assert response.json()["error"]["code"] == "rate_limited"
        # Its own bucket: visits are still allowed.
        assert post_visit(api_client, {"program_id": program.pk}).status_code == 200


class TestCors:
    @pytest.mark.parametrize(
        ("path", "method"),
        [
            ("/api/v1/track/click", "POST"),
            ("/api/v1/track/lead", "POST"),
            (VISIT_URL, "POST"),
            (CONFIG_URL, "GET"),
        ],
    )
    def test_it_answers_the_preflight_of_a_json_call_from_any_site(self, client, path, method):
        response = client.options(
            path,
            HTTP_ORIGIN=SITE,
            HTTP_ACCESS_CONTROL_REQUEST_METHOD=method,
            HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type",
        )
        assert response.status_code == 200
        assert response["Access-Control-Allow-Origin"] == "*"
        assert method in response["Access-Control-Allow-Methods"]
        assert "content-type" in response["Access-Control-Allow-Headers"].split(", ")
        assert "Access-Control-Allow-Credentials" not in response

    def test_the_answer_lets_the_page_read_the_request_id_and_limits(self, api_client, program):
        response = post_visit(api_client, {"program_id": program.pk}, HTTP_ORIGIN=SITE)
        assert response["Access-Control-Allow-Origin"] == "*"
        exposed = response["Access-Control-Expose-Headers"]
        for name in ("X-Request-ID", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
            assert name in exposed

    def test_routes_outside_the_tracker_stay_same_origin(self, client):
        response = client.get("/healthz", HTTP_ORIGIN=SITE)
        assert "Access-Control-Allow-Origin" not in response


def test_the_openapi_description_covers_visit_and_config(client):
    paths = client.get("/api/schema/", {"format": "json"}).json()["paths"]
    assert {"200", "400", "429", "500"} <= set(paths[VISIT_URL]["post"]["responses"])
    assert {"200", "400", "404", "429"} <= set(paths[CONFIG_URL]["get"]["responses"])
    assert paths[CONFIG_URL]["get"]["parameters"][0]["name"] == "program_id"


def test_the_openapi_description_names_the_configs_link_aliases(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    config = schema["components"]["schemas"]["TrackerConfig"]
    assert config["properties"]["link_aliases"]["type"] == "array"
    assert config["properties"]["link_aliases"]["items"]["type"] == "string"
    assert "aff" in config["properties"]["link_aliases"]["description"]
    assert "link_aliases" in config["required"]
