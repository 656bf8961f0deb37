"""SharedFieldsSerializer binds its fields once per thread: instances share them, and one body's validation leaves
nothing behind for the next."""

import threading

from tracking.api.serializers import ClickInputSerializer, LeadInputSerializer


def test_instances_of_a_class_share_their_bound_fields_within_a_thread():
    first = ClickInputSerializer(data={"affiliate_url": "https://shop.example.com/?aff=a"})
    second = ClickInputSerializer(data={"affiliate_url": "https://shop.example.com/?aff=b"})
    assert first.fields is second.fields
    assert LeadInputSerializer(data={}).fields is not first.fields


def test_each_thread_binds_its_own():
    seen = []
    worker = threading.Thread(target=lambda: seen.append(ClickInputSerializer(data={}).fields))
    worker.start()
    worker.join()
    assert seen[0] is not ClickInputSerializer(data={}).fields


def test_a_refused_body_leaves_nothing_for_the_next():
    refused = ClickInputSerializer(data={"affiliate_url": 5, "page_url": ["x"], "screen_resolution": "big"})
    assert not refused.is_valid()
    assert set(refused.errors) == {"affiliate_url", "page_url", "screen_resolution"}
    accepted = ClickInputSerializer(data={"affiliate_url": " https://shop.example.com/?aff=a ", "page_url": "p"})
    assert accepted.is_valid(), accepted.errors
    assert accepted.validated_data == {"affiliate_url": "https://shop.example.com/?aff=a", "page_url": "p"}
    again = ClickInputSerializer(data={"affiliate_url": 5})
    assert not again.is_valid()
    assert set(again.errors) == {"affiliate_url"}
