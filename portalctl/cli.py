"""The commands (argparse)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from portalctl.client import ApiError, Client, load_config, save_config

TERMINAL = {"ready", "expired", "cancelled", "ended"}


def _print(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(text)


def _config_body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {
        "site": args.site,
        "node_type": args.node_type,
        "node_count": args.nodes,
        "term": args.term,
        "duration": args.duration,
        "start_date": args.start_date,
    }
    for item in args.addon or []:
        code, _sep, qty = item.partition("=")
        body.setdefault("addons", {})[code] = qty or "1"
    return body


def _lines(data: dict[str, Any]) -> str:
    rows = [
        f"  {line['description']:<40} {line['quantity']:>8} {line['unit']:<6} {line['gross']:>14}"
        for line in data.get("lines", [])
    ]
    return "\n".join(rows)


def cmd_configure(args: argparse.Namespace, client: Client | None) -> int:
    path = save_config(args.url, args.key)
    _print(args, {"config": str(path)}, f"Saved to {path}.")
    return 0


def cmd_availability(args: argparse.Namespace, client: Client) -> int:
    start = datetime.fromisoformat(args.start or f"{args.start_date}T00:00:00+08:00")
    end = datetime.fromisoformat(args.end) if args.end else start + timedelta(days=args.days)
    data = client.get(
        "/availability/",
        site=args.site,
        node_type=args.node_type,
        count=args.count,
        start=start.isoformat(),
        end=end.isoformat(),
    )
    text = (
        f"{data['free']} free of {data['node_type']} at {data['site']} "
        f"({data['start']} → {data['end']}); {data['requested']} "
        + (
            "can be placed."
            if data["can_place"]
            else "cannot be placed; earliest full start "
            f"{data['earliest_start'] or 'none in view'}."
        )
    )
    _print(args, data, text)
    return 0


def cmd_estimate(args: argparse.Namespace, client: Client) -> int:
    data = client.post("/estimates/", _config_body(args))
    text = (
        f"Estimate ({data['term']} × {data['duration']}), nothing held:\n{_lines(data)}\n"
        f"  total {data['gross_total']} {data['currency']} "
        f"(net {data['net_total']}, VAT {data['vat_total']}); "
        + ("available now." if data["available"] else f"only {data['free_nodes']} free.")
    )
    _print(args, data, text)
    return 0


def _quote_text(q: dict[str, Any]) -> str:
    return (
        f"{q['number']} v{q['version']} {q['status']}: {q['gross_total']} {q['currency']}, "
        f"holds until {q['expires_at']}" + (f"; order {q['order']}" if q.get("order") else "")
    )


def cmd_quote(args: argparse.Namespace, client: Client) -> int:
    if args.action == "create":
        data = client.post("/quotes/", _config_body(args))
    elif args.action == "accept":
        data = client.post(
            f"/quotes/{args.number}/accept/",
            {"name": args.name, "payment_method": args.payment_method},
        )
        _print(
            args,
            data,
            f"Accepted: order {data['number']} ({data['status']}), "
            f"{data['gross_total']} {data['currency']}.",
        )
        return 0
    elif args.action == "reject":
        data = client.post(
            f"/quotes/{args.number}/reject/", {"name": args.name, "reason": args.reason}
        )
    else:
        data = client.get(f"/quotes/{args.number}/")
    _print(args, data, _quote_text(data))
    return 0


def _order_text(o: dict[str, Any]) -> str:
    lines = [
        f"{o['number']} {o['status']} ({o['status_label']}) {o['gross_total']} {o['currency']}"
    ]
    if o.get("gate", {}).get("missing"):
        lines.append("  waiting for: " + ", ".join(o["gate"]["missing"]))
    op = o.get("provisioning")
    if op:
        lines.append(f"  provisioning {op['status']} {op['percent']}% {op['message']}")
    return "\n".join(lines)


def cmd_order(args: argparse.Namespace, client: Client) -> int:
    if args.action == "terms":
        data = client.post(f"/orders/{args.number}/terms/", {"name": args.name})
    elif args.action == "keys":
        data = client.post(f"/orders/{args.number}/ssh-keys/", {"ssh_key_ids": args.key_id})
    elif args.action == "pay":
        data = client.get(f"/orders/{args.number}/bank-transfer/")
        _print(
            args,
            data,
            (
                f"Transfer {data['amount']} {data['currency']} by {data['due_at']} to "
                f"{data['account_name']}, {data['bank_name']}, account {data['account_number']} "
                f"(SWIFT {data['swift_code']}), reference {data['reference']}."
            ),
        )
        return 0
    else:
        data = client.get(f"/orders/{args.number}/")
    _print(args, data, _order_text(data))
    return 0


def cmd_watch(args: argparse.Namespace, client: Client) -> int:
    deadline = time.monotonic() + args.timeout
    last = ""
    while True:
        data = client.get(f"/orders/{args.number}/")
        op = data.get("provisioning") or {}
        line = f"{data['status']} {op.get('percent', 0)}% {op.get('message', '')}".strip()
        if line != last and not args.json:
            print(line, flush=True)
            for node in op.get("nodes", []):
                print(f"  {node['hostname']}: {node['percent']}% {node['message']}", flush=True)
            last = line
        if data["status"] in TERMINAL or op.get("status") == "failed":
            if args.json:
                print(json.dumps(data, indent=2, ensure_ascii=False))
            return 0 if data["status"] == "ready" else 1
        if time.monotonic() > deadline:
            print(f"still {data['status']} after {args.timeout}s", file=sys.stderr)
            return 1
        time.sleep(args.interval)


def cmd_access(args: argparse.Namespace, client: Client) -> int:
    data = client.get(f"/orders/{args.number}/access/")
    if not data["delivered"] and not data["nodes"]:
        raise ApiError(409, "not_delivered", f"Order {args.number} has not been delivered yet.")
    text = data["ssh_config"] if args.command == "ssh-config" else data["hostfile"]
    _print(args, data, text.rstrip("\n"))
    return 0


DOCUMENTS = {"invoice": "invoices", "credit-note": "credit-notes", "contract": "contracts"}


def cmd_download(args: argparse.Namespace, client: Client) -> int:
    path = f"/{DOCUMENTS[args.kind]}/{args.number}/pdf/"
    deadline = time.monotonic() + args.timeout
    while True:
        status, payload, headers = client.download(path)
        if status == 200:
            break
        if time.monotonic() > deadline:
            raise ApiError(202, "document_pending", "The document is still being prepared.")
        time.sleep(float(headers.get("Retry-After", "2")))
    out = Path(args.output or f"{args.number}.pdf")
    out.write_bytes(payload)
    _print(args, {"file": str(out), "bytes": len(payload)}, f"Saved {out} ({len(payload)} bytes).")
    return 0


def cmd_ssh_key(args: argparse.Namespace, client: Client) -> int:
    if args.action == "add":
        data = client.post(
            "/ssh-keys/", {"name": args.name, "public_key": Path(args.file).read_text().strip()}
        )
        _print(args, data, f"Added key {data['id']} {data['fingerprint']}.")
    else:
        data = client.get("/ssh-keys/")
        _print(
            args,
            data,
            "\n".join(f"{k['id']}\t{k['name']}\t{k['fingerprint']}" for k in data["results"]),
        )
    return 0


def _configuration_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--site", required=True)
    p.add_argument("--node-type", required=True)
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--term", default="month", choices=["day", "month", "quarter", "year"])
    p.add_argument("--duration", type=int, default=1)
    p.add_argument(
        "--start-date", default=str(datetime.now().astimezone().date() + timedelta(days=7))
    )
    p.add_argument("--addon", action="append", help="CODE=QUANTITY")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="portalctl", description="The GPU portal from the shell.")
    root.add_argument("--json", action="store_true", help="print the API's JSON")
    root.add_argument("--lang", default="", help="en or zh-Hans (messages and documents)")
    sub = root.add_subparsers(dest="command", required=True)

    p = sub.add_parser("configure", help="save the portal URL and API key")
    p.add_argument("--url", required=True)
    p.add_argument("--key", required=True)
    p.set_defaults(func=cmd_configure, needs_client=False)

    p = sub.add_parser("availability", help="free nodes and the earliest full start")
    p.add_argument("--site", required=True)
    p.add_argument("--node-type", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument(
        "--start-date", default=str(datetime.now().astimezone().date() + timedelta(days=7))
    )
    p.add_argument("--start", help="ISO 8601 with offset (instead of --start-date)")
    p.add_argument("--end")
    p.add_argument("--days", type=int, default=30)
    p.set_defaults(func=cmd_availability)

    p = sub.add_parser("estimate", help="price a configuration (nothing held)")
    _configuration_options(p)
    p.set_defaults(func=cmd_estimate)

    p = sub.add_parser("quote", help="firm quotes: create, show, accept, reject")
    qs = p.add_subparsers(dest="action", required=True)
    q = qs.add_parser("create")
    _configuration_options(q)
    for name in ("show", "accept", "reject"):
        q = qs.add_parser(name)
        q.add_argument("number")
        if name != "show":
            q.add_argument("--name", required=True, help="who decides")
        if name == "accept":
            q.add_argument(
                "--payment-method", default="bank_transfer", choices=["bank_transfer", "card"]
            )
        if name == "reject":
            q.add_argument("--reason", default="")
    p.set_defaults(func=cmd_quote)

    p = sub.add_parser("order", help="orders: show, accept terms, choose SSH keys, pay")
    os_ = p.add_subparsers(dest="action", required=True)
    for name in ("show", "terms", "keys", "pay"):
        o = os_.add_parser(name)
        o.add_argument("number")
        if name == "terms":
            o.add_argument("--name", required=True)
        if name == "keys":
            o.add_argument("--key-id", type=int, action="append", required=True)
    p.set_defaults(func=cmd_order)

    p = sub.add_parser("watch", help="follow an order's provisioning until it is ready")
    p.add_argument("number")
    p.add_argument("--interval", type=float, default=5.0)
    p.add_argument("--timeout", type=float, default=7200.0)
    p.set_defaults(func=cmd_watch)

    for name in ("ssh-config", "hostfile"):
        p = sub.add_parser(name, help=f"the delivered nodes' {name}")
        p.add_argument("number")
        p.set_defaults(func=cmd_access)

    p = sub.add_parser("download", help="download a document's PDF")
    p.add_argument("kind", choices=sorted(DOCUMENTS))
    p.add_argument("number")
    p.add_argument("-o", "--output")
    p.add_argument("--timeout", type=float, default=120.0)
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("ssh-key", help="the organisation's SSH keys: list, add")
    ks = p.add_subparsers(dest="action", required=True)
    ks.add_parser("list")
    k = ks.add_parser("add")
    k.add_argument("--name", default="")
    k.add_argument("--file", required=True, help="the .pub file")
    p.set_defaults(func=cmd_ssh_key)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        client = None
        if getattr(args, "needs_client", True):
            config = load_config()
            client = Client(config.get("url", ""), config.get("key", ""), language=args.lang)
        result: int = args.func(args, client)
        return result
    except ApiError as exc:
        if args.json and exc.body:
            print(json.dumps(exc.body, indent=2, ensure_ascii=False), file=sys.stderr)
        else:
            print(str(exc), file=sys.stderr)
        return 1
