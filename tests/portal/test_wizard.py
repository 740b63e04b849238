"""The sizing wizard page: estimates, prices per term with availability, clear errors."""

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

pytestmark = pytest.mark.django_db


def wizard(client, **params):
    with override("en"):
        url = reverse("wizard")
    return client.get(url, params)


def base(site, **kw):
    start = (timezone.localdate() + timezone.timedelta(days=10)).isoformat()
    params = {
        "params_billion": "175",
        "precision": "bf16",
        "optimizer": "adamw",
        "zero_stage": "3",
        "site": site.pk,
        "start_date": start,
    }
    params.update(kw)
    return params


def test_large_model_gets_h100_ib_and_prices_per_term(client, demo_sz):
    response = wizard(client, **base(demo_sz, target_tokens_billion="300", target_days="60"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "175 B × 2 bytes × 3.5 = 1,225 GB" in html
    assert "H100 8-GPU NVLink" in html
    assert "InfiniBand NDR 400G" in html
    offers = response.context["offers"]
    assert [o["term"] for o in offers] == ["month", "quarter", "year"]
    monthly = [o["priced"].net_per_month for o in offers]
    assert monthly[0] >= monthly[1] >= monthly[2]  # longer terms never cost more a month
    year = offers[2]
    assert any(a["code"] == "h100-annual" for a in year["lines"][0].adjustments)


def test_small_model_fits_one_node_and_shows_availability(client, demo_sz):
    response = wizard(client, **base(demo_sz, params_billion="7", zero_stage="0"))
    result = response.context["result"]
    assert result.node_count == 1
    offer = response.context["offers"][0]
    assert offer["availability"].can_place
    assert "Available now" in response.content.decode()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"params_billion": "0"}, "params_billion", "more than 0"),
        ({"params_billion": "-3"}, "params_billion", "more than 0"),
        ({"params_billion": "900000"}, "params_billion", ""),
        ({"precision": "int3"}, "precision", ""),
        ({"target_tokens_billion": "100"}, "target_days", ""),
        ({"start_date": "2020-01-01"}, "start_date", "past"),
    ],
)
def test_impossible_inputs_get_clear_messages_next_to_the_field(
    client, demo_sz, changes, field, message
):
    response = wizard(client, **base(demo_sz, **changes))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert field in errors, errors
    assert message in " ".join(errors[field])
    assert "result" not in response.context
