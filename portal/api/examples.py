"""One example per operation of ``/api/v1/`` (request and answer), in one place.

``portal.api.schema.attach_examples`` puts them into the served OpenAPI document; tests
check that every operation has one and that each example matches the schema it
illustrates (tests/portal/api/test_schema_examples.py), so an example cannot drift from
the API. Values are shaped like the demo data: site SZ (Shenzhen, CNY, VAT 6 %), node
type ``h100-8x``.
"""

from __future__ import annotations

from typing import Any

T0 = "2027-01-04T00:00:00+08:00"
T1 = "2027-02-04T00:00:00+08:00"
NOW = "2026-12-28T10:15:00+08:00"
LATER = "2026-12-28T10:42:00+08:00"
HOSTS = ["sz-h100-014", "sz-h100-015"]


def page(*results: dict[str, Any]) -> dict[str, Any]:
    return {
        "next": "https://portal.example.com/api/v1/orders/?cursor=cD0yMDI2",
        "previous": None,
        "results": list(results),
    }


SITE = {
    "code": "SZ",
    "name": "Shenzhen",
    "name_zh": "深圳",
    "city": "Shenzhen",
    "city_zh": "深圳",
    "timezone": "Asia/Shanghai",
    "currency": "CNY",
    "vat_rate": "0.0600",
    "lead_time_hours": 48,
}
NODE_TYPE = {
    "code": "h100-8x",
    "name": "H100 8-GPU NVLink",
    "name_zh": "H100 八卡 NVLink",
    "cpu": "2 × Intel Xeon Platinum 8480+",
    "ram_gb": 2048,
    "ram_kind": "DDR5",
    "gpu_model": "NVIDIA H100 SXM5 80GB",
    "gpu_count": 8,
    "gpu_memory_gb": 80,
    "interconnect": "nvswitch",
    "nic_count": 8,
    "nic_speed_gbps": 400,
    "fabric": "ib_ndr",
    "storage": "8 × 3.84 TB NVMe",
    "description": "",
}
CONFIGURATION = {
    "site": "SZ",
    "node_type": "h100-8x",
    "node_count": 2,
    "term": "month",
    "duration": 1,
    "start_date": "2027-01-04",
}
LINE = {
    "kind": "node",
    "code": "h100-8x",
    "description": "H100 8-GPU NVLink",
    "quantity": "2.00",
    "unit": "node",
    "unit_price": "100000.00",
    "periods": "1.0000",
    "period_unit": "month",
    "list_amount": "200000.00",
    "net": "200000.00",
    "vat": "12000.00",
    "gross": "212000.00",
    "tax_category": "it_service",
}
QUOTE = {
    "id": 41,
    "number": "Q-SZ-2026-000041",
    "version": 1,
    "status": "sent",
    "status_label": "sent",
    "site": "SZ",
    "currency": "CNY",
    "term": "month",
    "duration": 1,
    "start_date": "2027-01-04",
    "valid_until": "2026-12-31",
    "expires_at": "2026-12-31T23:59:59+08:00",
    "list_total": "200000.00",
    "net_total": "200000.00",
    "vat_total": "12000.00",
    "gross_total": "212000.00",
    "lines": [LINE],
    "placement": {"groups": [{"leaf": "sz-leaf-02", "hostnames": HOSTS}]},
    "sent_at": NOW,
    "decided_at": None,
    "order": None,
    "previous": None,
}
STEP = {
    "name": "install_image",
    "label": "Install the OS image",
    "status": "running",
    "started_at": NOW,
    "finished_at": None,
    "message": "",
}
OPERATION = {
    "id": "prov-17",
    "kind": "provision",
    "status": "running",
    "done": False,
    "percent": 40,
    "eta": LATER,
    "message": "Installing the OS image",
    "order": "O-SZ-2026-000017",
    "created_at": NOW,
    "nodes": [
        {
            "hostname": h,
            "state": "active",
            "percent": 40,
            "message": "",
            "eta": LATER,
            "steps": [STEP],
        }
        for h in HOSTS
    ],
}
ORDER = {
    "number": "O-SZ-2026-000017",
    "status": "awaiting_payment",
    "status_label": "awaiting payment",
    "site": "SZ",
    "quote": "Q-SZ-2026-000041",
    "currency": "CNY",
    "gross_total": "212000.00",
    "start_at": T0,
    "end_at": T1,
    "payment_due_at": "2027-01-01T00:00:00+08:00",
    "paid_at": None,
    "created_at": NOW,
}
ORDER_DETAIL = {
    **ORDER,
    "timeline": [
        {
            "at": NOW,
            "from_status": "",
            "to_status": "awaiting_payment",
            "to_label": "awaiting payment",
            "who": "Li Wei",
            "comment": "Quote accepted.",
        }
    ],
    "nodes": HOSTS,
    "provisioning": None,
    "gate": {
        "paid": False,
        "agreed": False,
        "needs_contract": False,
        "released": False,
        "provision_at": None,
        "missing": ["payment", "the standard terms"],
    },
    "invoices": ["PN-SZ-2026-000031"],
}
INVOICE = {
    "number": "PN-SZ-2026-000031",
    "order": "O-SZ-2026-000017",
    "status": "issued",
    "status_label": "issued",
    "currency": "CNY",
    "net_total": "200000.00",
    "vat_total": "12000.00",
    "gross_total": "212000.00",
    "amount_paid": "0.00",
    "amount_due": "212000.00",
    "issued_at": NOW,
    "due_at": "2027-01-01T00:00:00+08:00",
    "paid_at": None,
    "bank_reference": "GPU2026000031",
    "period_seq": 1,
    "period_start": T0,
    "period_end": T1,
    "pdf_url": "/api/v1/invoices/PN-SZ-2026-000031/pdf/",
}
CREDIT_NOTE = {
    "number": "CN-SZ-2027-000003",
    "invoice": "PN-SZ-2026-000031",
    "order": "O-SZ-2026-000017",
    "currency": "CNY",
    "gross_total": "3533.33",
    "reason": "SLA credit, January 2027",
    "issued_at": "2027-02-02T09:00:00+08:00",
    "pdf_url": "/api/v1/credit-notes/CN-SZ-2027-000003/pdf/",
}
CONTRACT = {
    "number": "C-SZ-2026-000009",
    "order": "O-SZ-2026-000017",
    "status": "customer_signed",
    "status_label": "signed by the customer",
    "terms_version": "2026-10",
    "created_at": NOW,
    "signer_name": "Li Wei",
    "signed_at": LATER,
    "countersigned_at": None,
    "signing_url": "/en/account/orders/O-SZ-2026-000017/contract/",
    "pdf_url": "/api/v1/contracts/C-SZ-2026-000009/pdf/",
}
PENDING = {
    "kind": "document_render",
    "status": "pending",
    "done": False,
    "retry_after": 3,
    "poll": "/api/v1/invoices/PN-SZ-2026-000031/pdf/",
}
SSH_KEY = {
    "id": 5,
    "name": "laptop",
    "algorithm": "ssh-ed25519",
    "bits": 256,
    "fingerprint": "SHA256:p4Bv4XQbUm0Wvx8sWc2m1oJx0k5mJzLwq6v0m5vJ9rE",
    "public_key": (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICEa370Oh8CtCX/fsSvLod+jXatM+gDFQnJEFumtNGGH me@laptop"
    ),
    "created_at": NOW,
}
ENDPOINT = {
    "id": 3,
    "url": "https://ci.example.com/hooks/gpu",
    "description": "CI",
    "event_types": ["order.paid", "order.ready", "node.replaced"],
    "active": True,
    "created_at": NOW,
}
ENDPOINT_SECRET = {
    **ENDPOINT,
    "secret": "whsec_1RmGv0yJx0n2mZ8tq7hVb4kUu9cPz3sWfE5aL6dQ_oY",
    "previous_secret_until": None,
}
DELIVERY = {
    "id": 88,
    "endpoint": 3,
    "event_id": "evt_5f0c9c1d2b3a4e6f8a7b9c0d1e2f3a4b",
    "event_type": "order.ready",
    "status": "succeeded",
    "attempts": 2,
    "last_status_code": 200,
    "last_response_ms": 84,
    "last_error": "",
    "created_at": NOW,
    "delivered_at": LATER,
    "replay_of": None,
    "attempt_log": [
        {"status_code": 503, "response_ms": 120, "error": "HTTP 503", "created_at": NOW},
        {"status_code": 200, "response_ms": 84, "error": "", "created_at": LATER},
    ],
}
HEALTH_EVENT = {
    "id": 12,
    "order": "O-SZ-2026-000017",
    "node": "sz-h100-014",
    "rule": "ecc_uncorrectable",
    "title": "Uncorrectable ECC errors",
    "source": "NVIDIA DCGM: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "action": "replace",
    "status": "awaiting",
    "status_label": "waiting for your approval",
    "evidence": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL = 3 on sz-h100-014 GPU 5 at 2027-01-10 02:13:00 UTC",
    "metric": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "value": 3.0,
    "gpu": "5",
    "observed_at": "2027-01-10T10:13:00+08:00",
    "detected_at": "2027-01-10T10:13:30+08:00",
    "decide_by": "2027-01-10T10:43:30+08:00",
    "spare": None,
    "operation": None,
    "handed_over_at": None,
    "events": [
        {
            "at": "2027-01-10T10:13:30+08:00",
            "from_status": "",
            "to_status": "open",
            "to_label": "detected",
            "comment": "Detected: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL = 3 on sz-h100-014 GPU 5",
        },
        {
            "at": "2027-01-10T10:13:31+08:00",
            "from_status": "open",
            "to_status": "awaiting",
            "to_label": "waiting for your approval",
            "comment": "Node cordoned; waiting for the customer's approval.",
        },
    ],
}
RENEWAL = {
    "order": "O-SZ-2026-000017",
    "status": "offered",
    "offered_from": "2027-01-21T00:00:00+08:00",
    "quote": "Q-SZ-2027-000052",
    "quote_status": "sent",
    "first_refusal_until": "2027-01-28T23:59:59+08:00",
    "same_nodes": True,
    "kept": HOSTS,
    "replaced": [],
    "offered": [],
    "unavailable": "",
    "auto_accepted": False,
    "new_order": None,
    "gross_total": "212000.00",
    "currency": "CNY",
    "start_at": None,
    "end_at": None,
}
POLICY = {"mode": "ask", "ask_minutes": 30, "updated_at": NOW}
SIGNATURE = {
    "field": "Signature1",
    "kind": "certification",
    "signer": "Li Wei",
    "issuer": "GPU Portal Signing CA",
    "ours": True,
    "intact": True,
    "valid": True,
    "trusted": True,
    "docmdp_ok": True,
    "coverage": "ENTIRE_REVISION",
    "modification_level": "LTA_UPDATES",
    "signed_at": LATER,
    "timestamp_at": LATER,
    "timestamp_trusted": True,
}
DECISION = {"name": "Li Wei", "payment_method": "bank_transfer"}
TICKET = {
    "id": 7,
    "reference": "T-000007",
    "subject": "GPU 5 of sz-h100-014 drops off the bus",
    "category": "hardware",
    "category_label": "hardware fault",
    "priority": "high",
    "priority_label": "high: degraded",
    "status": "open",
    "status_label": "waiting on support",
    "tier": "contract",
    "source": "customer",
    "order": "O-SZ-2026-000017",
    "node": "sz-h100-014",
    "gpu_serial": "1654922009871",
    "gpu_index": "5",
    "created_at": "2027-01-10T10:20:00+08:00",
    "first_response_at": None,
    "resolved_at": None,
    "clocks": [
        {
            "kind": "response",
            "state": "running",
            "due": "2027-01-10T10:50:00+08:00",
            "stopped_at": None,
            "minutes_left": 29,
        },
        {
            "kind": "resolution",
            "state": "running",
            "due": "2027-01-10T14:20:00+08:00",
            "stopped_at": None,
            "minutes_left": 239,
        },
    ],
}
TICKET_DETAIL = {
    **TICKET,
    "messages": [
        {
            "id": 21,
            "from_support": False,
            "author": "Li Wei",
            "via": "web",
            "body": "nvidia-smi shows GPU 5 as lost since 10:12; the job stopped.",
            "created_at": "2027-01-10T10:20:00+08:00",
        }
    ],
    "history": [
        {
            "at": "2027-01-10T10:20:00+08:00",
            "from_status": "",
            "to_status": "open",
            "to_label": "waiting on support",
            "who": "Li Wei",
            "comment": "Ticket opened.",
        }
    ],
}

# operation id → {"request": body, "response": body, "status": the answer's code}
EXAMPLES: dict[str, dict[str, Any]] = {
    "sites_list": {"response": [SITE]},
    "sites_read": {"response": SITE},
    "node_types_list": {"response": [NODE_TYPE]},
    "node_types_read": {"response": NODE_TYPE},
    "price_books_list": {
        "response": [
            {
                "id": 2,
                "site": "SZ",
                "name": "Shenzhen 2026 H2",
                "currency": "CNY",
                "effective_from": "2026-07-01T00:00:00+08:00",
            }
        ]
    },
    "availability_read": {
        "response": {
            "site": "SZ",
            "node_type": "h100-8x",
            "requested": 4,
            "free": 2,
            "can_place": False,
            "start": T0,
            "end": T1,
            "earliest_start": "2027-01-15T00:00:00+08:00",
            "leaves": {"sz-leaf-01": 2},
        }
    },
    "sizing_read": {
        "summary": "70 B, ZeRO-3 training (abridged: plans, memory, compute and layout follow)",
        "response": {
            "mode": "train",
            "band": "30-70B",
            "input": {"params": 70000000000, "precision": "bf16", "optimizer": "adamw", "zero": 3},
            "cheapest": {"node_type": "h100-8x", "gpus": 16, "nodes": 2},
        },
    },
    "estimates_create": {
        "request": CONFIGURATION,
        "response": {
            "currency": "CNY",
            "term": "month",
            "duration": 1,
            "lines": [{**LINE, "note": ""}],
            "list_total": "200000.00",
            "discount_total": "0.00",
            "net_total": "200000.00",
            "vat_total": "12000.00",
            "gross_total": "212000.00",
            "available": True,
            "free_nodes": 6,
            "earliest_start": T0,
        },
    },
    "quotes_list": {"response": page(QUOTE)},
    "quotes_create": {"request": CONFIGURATION, "response": QUOTE, "status": "201"},
    "quotes_read": {"response": QUOTE},
    "quotes_revisions": {"response": [QUOTE]},
    "quotes_accept": {
        "request": DECISION,
        "response": ORDER_DETAIL,
        "status": "201",
    },
    "quotes_reject": {
        "request": {"name": "Li Wei", "reason": "Budget moved to Q2."},
        "response": {
            **QUOTE,
            "status": "rejected",
            "status_label": "rejected",
            "decided_at": LATER,
        },
    },
    "orders_list": {"response": page(ORDER)},
    "orders_read": {
        "response": {
            **ORDER_DETAIL,
            "status": "provisioning",
            "status_label": "provisioning",
            "provisioning": OPERATION,
        }
    },
    "operations_read": {"response": OPERATION},
    "orders_access": {
        "response": {
            "delivered": True,
            "jump_host": "jump.sz.portal.example.com",
            "nodes": [
                {
                    "hostname": h,
                    "user": "ubuntu",
                    "addresses": [f"10.20.0.{14 + i}"],
                    "ssh": f"ssh -J jump.sz.portal.example.com ubuntu@10.20.0.{14 + i}",
                }
                for i, h in enumerate(HOSTS)
            ],
            "ssh_config": (
                "# GPU portal order O-SZ-2026-000017\nHost sz-h100-014\n    HostName 10.20.0.14\n"
                "    User ubuntu\n    ProxyJump jump.sz.portal.example.com\n"
            ),
            "hostfile": "sz-h100-014 slots=8\nsz-h100-015 slots=8\n",
        }
    },
    "orders_delivery_kit": {
        "response": {
            "hostfile": "10.20.0.14 slots=8\n10.20.0.15 slots=8\n",
            "nccl_env": "NCCL_SOCKET_IFNAME=bond0\nNCCL_IB_HCA=mlx5_0:1,mlx5_1:1\n",
            "guidance": ["Ring: the default for large messages within a node and on a few nodes."],
            "topology_conf": "SwitchName=sz-leaf-02 Nodes=sz-h100-[014-015]\n",
            "k8s_labels": "topology.kubernetes.io/region=SZ\n",
        }
    },
    "orders_renewal": {"response": RENEWAL},
    "orders_renewal_accept": {
        "request": DECISION,
        "response": {**ORDER_DETAIL, "number": "O-SZ-2027-000023", "start_at": T1},
        "status": "201",
    },
    "orders_renewal_decline": {
        "request": {"name": "Li Wei", "reason": "The project ends."},
        "response": {
            **RENEWAL,
            "status": "declined",
            "quote_status": "rejected",
            "first_refusal_until": None,
        },
    },
    "orders_replacement_policy_read": {"response": POLICY},
    "orders_replacement_policy_set": {
        "request": {"mode": "ask", "ask_minutes": 30},
        "response": POLICY,
    },
    "orders_monitoring": {
        "response": {
            "order": "O-SZ-2026-000017",
            "metric": "sm",
            "title": "SM activity",
            "unit": "%",
            "range": "hour",
            "start": "2027-01-10T09:00:00Z",
            "end": "2027-01-10T10:00:00Z",
            "series": [
                {
                    "node": "sz-h100-014",
                    "gpu": "0",
                    "points": [
                        {"time": "2027-01-10T09:00:00Z", "value": 91.2},
                        {"time": "2027-01-10T09:00:30Z", "value": 90.8},
                    ],
                }
            ],
        }
    },
    "orders_gpus": {
        "response": [
            {
                "node": "sz-h100-014",
                "gpu": "0",
                "uuid": "GPU-3f1c2a9e-5b7d-4e21-9a0c-1d2e3f4a5b6c",
                "serial": "1654922009871",
                "model": "NVIDIA H100 80GB HBM3",
            }
        ]
    },
    "health_events_list": {"response": page(HEALTH_EVENT)},
    "health_events_read": {"response": HEALTH_EVENT},
    "health_events_approve": {
        "response": {
            **HEALTH_EVENT,
            "status": "replacing",
            "status_label": "replacing",
            "spare": "sz-h100-031",
            "operation": "prov-18",
        }
    },
    "orders_set_ssh_keys": {"request": {"ssh_key_ids": [5]}, "response": ORDER_DETAIL},
    "orders_accept_terms": {"request": {"name": "Li Wei"}, "response": ORDER_DETAIL},
    "orders_bank_transfer": {
        "response": {
            "invoice": "PN-SZ-2026-000031",
            "amount": "212000.00",
            "currency": "CNY",
            "due_at": "2027-01-01T00:00:00+08:00",
            "reference": "GPU2026000031",
            "account_name": "GPU Portal (Shenzhen) Co., Ltd.",
            "account_number": "4000 0231 0900 1234 567",
            "bank_name": "Industrial and Commercial Bank of China, Shenzhen Branch",
            "swift_code": "ICBKCNBJSZN",
        }
    },
    "orders_card_payment": {
        "response": {
            "payment": 9,
            "client_secret": "pi_3QaBcD_secret_x1Y2z3",
            "publishable_key": "pk_test_51Example",
            "amount": "212000.00",
            "currency": "CNY",
        },
        "status": "201",
    },
    "invoices_list": {"response": page(INVOICE)},
    "invoices_read": {"response": INVOICE},
    "invoices_pdf": {"response": PENDING, "status": "202"},
    "credit_notes_list": {"response": page(CREDIT_NOTE)},
    "credit_notes_read": {"response": CREDIT_NOTE},
    "credit_notes_pdf": {"response": PENDING, "status": "202"},
    "contracts_list": {"response": page(CONTRACT)},
    "contracts_read": {"response": CONTRACT},
    "contracts_pdf": {"response": PENDING, "status": "202"},
    "contracts_verification": {
        "response": {
            "contract": "C-SZ-2026-000009",
            "document": "signed",
            "sha256": "9f2c4e1b7a0d3c5e8f6a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6",
            "status": "valid",
            "signer": "Li Wei",
            "signed_at": LATER,
            "detail": "",
            "audit_chain_intact": True,
            "signatures": [SIGNATURE],
        }
    },
    "tickets_list": {"response": page(TICKET)},
    "tickets_open": {
        "request": {
            "subject": "GPU 5 of sz-h100-014 drops off the bus",
            "body": "nvidia-smi shows GPU 5 as lost since 10:12; the job stopped.",
            "category": "hardware",
            "priority": "high",
            "order": "O-SZ-2026-000017",
            "gpu_serial": "1654922009871",
        },
        "response": TICKET_DETAIL,
        "status": "201",
    },
    "tickets_read": {"response": TICKET_DETAIL},
    "tickets_reply": {
        "request": {"body": "The job runs again on the spare; thank you."},
        "response": TICKET_DETAIL,
        "status": "201",
    },
    "ssh_keys_list": {"response": page(SSH_KEY)},
    "ssh_keys_create": {
        "request": {"name": "laptop", "public_key": SSH_KEY["public_key"]},
        "response": SSH_KEY,
        "status": "201",
    },
    "ssh_keys_read": {"response": SSH_KEY},
    "ssh_keys_delete": {"status": "204"},
    "webhook_endpoints_list": {"response": page(ENDPOINT)},
    "webhook_endpoints_create": {
        "request": {
            "url": "https://ci.example.com/hooks/gpu",
            "description": "CI",
            "event_types": ["order.paid", "order.ready", "node.replaced"],
        },
        "response": ENDPOINT_SECRET,
        "status": "201",
    },
    "webhook_endpoints_read": {"response": ENDPOINT},
    "webhook_endpoints_delete": {"status": "204"},
    "webhook_endpoints_rotate": {
        "request": {"overlap_hours": 24},
        "response": {**ENDPOINT_SECRET, "previous_secret_until": "2026-12-29T10:15:00+08:00"},
    },
    "webhook_event_types_list": {
        "response": [
            {
                "type": "order.ready",
                "description": "an order's cluster was delivered",
                "payload_schema": "#/components/schemas/OrderReadyWebhook",
            }
        ]
    },
    "webhook_deliveries_list": {"response": page(DELIVERY)},
    "webhook_deliveries_replay": {
        "response": {**DELIVERY, "id": 91, "status": "pending", "attempts": 0, "replay_of": 88},
        "status": "201",
    },
}
