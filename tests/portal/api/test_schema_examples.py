"""Examples on every operation of the served OpenAPI document, each matching the schema
it illustrates (request body and answer), and the webhook event types documented there
from the one registry in both languages."""

from __future__ import annotations

import time
from typing import Any

import jsonschema
import pytest

from accounts.webhooks import EVENT_TYPES
from portal.api.examples import EXAMPLES


def json_schema(node: Any) -> Any:
    """OpenAPI 3.0's ``nullable`` as JSON Schema's null type (the rest is the same)."""
    if isinstance(node, list):
        return [json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


@pytest.fixture(scope="module")
def document(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        return Client().get("/api/v1/schema/?format=json").json()


def _check(document: dict, schema: dict, value: Any, where: str) -> None:
    root = {"components": json_schema(document["components"]), **json_schema(schema)}
    try:
        jsonschema.Draft202012Validator(root).validate(value)
    except jsonschema.ValidationError as exc:
        pytest.fail(f"{where}: {exc.message} at {list(exc.absolute_path)}")


def test_every_operation_has_an_example_that_matches_its_schema(document):
    seen = set()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            op_id = operation["operationId"]
            seen.add(op_id)
            found = 0
            for media in operation.get("requestBody", {}).get("content", {}).values():
                for example in media.get("examples", {}).values():
                    _check(document, media["schema"], example["value"], f"{op_id} request")
                    found += 1
            for code, response in operation["responses"].items():
                for _name, media in response.get("content", {}).items():
                    for example in media.get("examples", {}).values():
                        _check(document, media["schema"], example["value"], f"{op_id} {code}")
                        found += 1
            no_body = all(not r.get("content") for r in operation["responses"].values())
            assert found or (no_body and op_id in EXAMPLES), f"{method} {path} has no example"
    assert seen == set(EXAMPLES), set(EXAMPLES) ^ seen  # no stale or missing example


def test_the_event_types_are_documented_from_the_registry_in_both_languages(document):
    description = document["info"]["description"]
    for code in EVENT_TYPES:
        assert f"| `{code}` |" in description, code
    assert "an order's cluster was delivered" in description and "订单的集群已交付" in description


def _receiver(code: str):
    scope: dict = {}
    exec(compile(code, "receiver", "exec"), scope)  # noqa: S102 - the docs' own example
    return scope["verify"]


def test_the_receiving_example_in_the_docs_and_readme_verifies_real_signatures(document):
    from pathlib import Path

    from accounts.webhooks import sign
    from portal.api.schema import RECEIVER_EXAMPLE

    assert RECEIVER_EXAMPLE in document["info"]["description"]
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    block = readme.split("```python\n", 1)[1].split("```", 1)[0]
    readme_code = "\n".join(line.removeprefix("  ") for line in block.splitlines()) + "\n"
    assert readme_code.strip() == RECEIVER_EXAMPLE.strip()
    verify = _receiver(RECEIVER_EXAMPLE)
    body, now = b'{"id":"evt_1","type":"order.ready"}', int(time.time())
    header = f"t={now},v1={sign('whsec_new', now, body)},v1={sign('whsec_old', now, body)}"
    assert verify("whsec_new", header, body) and verify("whsec_old", header, body)
    assert not verify("whsec_new", header, body + b" ")
    assert not verify("whsec_other", header, body)
    stale = now - 3600
    assert not verify("whsec_new", f"t={stale},v1={sign('whsec_new', stale, body)}", body)
