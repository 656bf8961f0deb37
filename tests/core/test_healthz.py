from unittest import mock

import pytest

pytestmark = pytest.mark.django_db


def test_it_answers_200_when_the_database_answers(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


def test_it_answers_503_when_the_database_does_not(client):
    with mock.patch("core.views.connection.cursor", side_effect=Exception("down")):
        response = client.get("/healthz")
    assert response.status_code == 503
