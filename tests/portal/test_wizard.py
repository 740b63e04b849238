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


def test_plans_show_the_gather_buffer_the_share_used_and_their_frameworks(client, demo_sz):
    # Llama-3 70B ZeRO-3 on the demo's H100 nodes: TP 8 × DP 2 at 94.8 % of 80 GiB.
    response = wizard(client, **base(demo_sz, params_billion="", arch="llama3-70b"))
    html = response.content.decode()
    plans = response.context["result"].plans
    plan = next(p for p in plans if p.option.gpu_model.startswith("H100"))
    assert plan.memory_warning
    assert "ZeRO-3 gather buffer" in html
    assert f"{plan.memory_share_percent:.1f}%" in html
    assert "over 90 percent: little room left" in html
    assert "/ 80 GiB" in html
    for name in plan.frameworks:
        assert name in html


def test_a_plan_with_data_parallel_degree_1_carries_no_zero_stage(client, demo_sz):
    # Llama-3 8B "ZeRO-2" on a 4 × A100 40G node: TP 4, DP 1, where ZeRO does nothing.
    response = wizard(
        client,
        **base(demo_sz, params_billion="", arch="llama3-8b", zero_stage="2"),
    )
    result = response.context["result"]
    a100 = next(p for p in result.plans if p.option.gpu_model.startswith("A100"))
    assert (a100.tp, a100.dp, a100.zero) == (4, 1, None)
    if result.cheapest is a100:
        assert "ZeRO-2 was asked for" in response.content.decode()


def test_a_72b_model_is_named_70_to_100b_and_follows_the_30_to_70b_rule(client, demo_sz):
    """The reviewer saw band "70-100B" beside the "30–70B" rule for Qwen2 72B (72.7B) and
    Llama 3 70B (70.6B): one table (``inventory.sizing.shape.SIZE_BANDS``) now gives the
    band its name and its rule, and the page says that the 30–70B rule applies."""
    for arch in ("qwen2-72b", "llama3-70b"):
        response = wizard(client, **base(demo_sz, params_billion="", arch=arch))
        html = response.content.decode()
        result = response.context["result"]
        assert result.band == "70-100B"
        assert '<dd id="size-band">70–100B (the 30–70B rule applies)</dd>' in html
        assert result.plans and all(
            p.band_rule.startswith("70–100B: the 30–70B rule applies below 100B")
            for p in result.plans
        )
    middle = wizard(client, **base(demo_sz, params_billion="50")).content.decode()
    assert '<dd id="size-band">30–70B</dd>' in middle and "30–70B: full NVLink" in middle
    large = wizard(client, **base(demo_sz)).content.decode()
    assert '<dd id="size-band">100B and up</dd>' in large and "100B and up: multi-node" in large
    with override("zh-hans"):
        url = reverse("wizard")
    zh = client.get(url, base(demo_sz, params_billion="", arch="qwen2-72b")).content.decode()
    assert '<dd id="size-band">70–100B（适用 30–70B 规则）</dd>' in zh


def test_the_explanations_speak_of_the_common_rule_of_thumb_never_the_seeds(client, demo_sz):
    pages = [
        wizard(client, **base(demo_sz, mode="infer", params_billion="70")),
        wizard(client, **base(demo_sz, zero_stage="1")),  # the 100B+ note on ZeRO-3
        wizard(client, **base(demo_sz, params_billion="", arch="llama3-70b")),
    ]
    texts = [p.content.decode() for p in pages]
    assert "The common rule of thumb (parameters × bytes × 3.5) is for training" in texts[0]
    assert "At 100B+ the usual practice pairs 3D parallelism" in texts[1]
    for html in texts:
        assert "seeds" not in html.replace("seed-examples", "")  # the section's CSS class
    with override("zh-hans"):
        url = reverse("wizard")
    zh = client.get(url, base(demo_sz, mode="infer", params_billion="70")).content.decode()
    assert "常用的经验公式（参数量 × 字节数 × 3.5）针对训练" in zh
