"""The explanation's commission policy is commissions.services.commission_policy, the one the sale is settled
with: for a product override, for a product with none, and for a sale naming no product."""

from decimal import Decimal

import pytest

from commissions.models import Commission, ProductCommissionRate
from commissions.services import commission_policy
from insight.explain import sale_explain
from tests.tracking.sales import post_sale, sale_body

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("product_id", "expected"),
    [
        ("pro", ("product", "pro", "fixed", "750", 750)),
        ("basic", ("program", "", "percent", "20", 2000)),
        ("", ("program", "", "percent", "20", 2000)),
    ],
)
def test_the_explained_policy_is_the_settled_one(api_client, program, customer, product_id, expected):
    ProductCommissionRate.objects.create(
        program=program, product_id="pro", commission_type="fixed", commission_rate=Decimal("750")
    )
    assert post_sale(api_client, program, **sale_body(product_id=product_id)).status_code == 200

    explained = sale_explain(program=program, transaction_id="txn_1")["commission"]["policy"]
    settled = commission_policy(program=program, product_id=product_id)

    assert (explained["source"], explained["product_id"], explained["commission_type"]) == (
        settled.source,
        settled.product_id,
        settled.commission_type,
    )
    assert Decimal(explained["rate"]) == settled.rate
    source, product, commission_type, rate, amount = expected
    assert (settled.source, settled.product_id, settled.commission_type) == (source, product, commission_type)
    assert explained["rate"] == rate and Commission.objects.get().amount_cents == amount
