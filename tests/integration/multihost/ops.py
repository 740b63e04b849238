"""The back office of the test network, a process on its own host.

First the migrate step that precedes the portal's processes (deploy/systemd/
gpu-portal-migrate: ``migrate_once``; ``--migrated`` is touched when done). Then it
prepares what the journeys need, as staff would: the demo data (``seed_demo``)
when the database has none, one organisation per client (an owner and an API key), and
It writes that to ``--out`` (JSON) and then plays finance: every line a journey appends
to the bank statement (``--statement``: ``INVOICE REFERENCE``, the transfer it made) is
marked paid through the same service the admin's action calls, once (a line already done
is skipped, an error is retried next round).

A paid order is provisioned at its rental's start minus the site's lead time, which is at
least a day ahead for any start a customer can choose (the earliest start is that lead
time away). So that the runs happen during the test, when the first transfer arrives
(every journey has its order by then) the back office sets Shenzhen's lead time to ten
days, as a provider that provisions further ahead would: the orders paid from then on
are provisioned at once.

    python -m tests.integration.multihost.ops --keys 4 --out ops.json --statement bank.txt
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import traceback
from pathlib import Path

LEAD_TIME_HOURS = 10 * 24


def prepare(count: int) -> dict[str, object]:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from accounts import api_keys
    from accounts.models import Membership, Organisation
    from inventory.models import Site

    if not Site.objects.exists():
        call_command("seed_demo", stdout=io.StringIO())
    users = get_user_model().objects
    keys = []
    for n in range(count):
        name = f"multihost-{n}"
        user = users.filter(username=name).first() or users.create_user(
            name, f"{name}@journeys.example", f"Pw-{os.urandom(8).hex()}", first_name=name
        )
        org, _ = Organisation.objects.get_or_create(name=f"Journey Lab {n}")
        Membership.objects.get_or_create(user=user, organisation=org, defaults={"role": "owner"})
        key = api_keys.api_key_create(
            organisation=org,
            actor=user,
            name="journey",
            scopes=dict.fromkeys(api_keys.API_FAMILIES, "write"),
        )
        keys.append({"organisation_id": org.pk, "key": key.secret})
    from django.conf import settings

    schedule = {
        name: {"task": entry["task"], "every": float(entry["schedule"])}
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
        if isinstance(entry["schedule"], int | float)
    }
    return {"keys": keys, "schedule": schedule, "time_zone": settings.TIME_ZONE}


def mark_paid(statement: Path, done: set[str]) -> None:
    from django.contrib.auth import get_user_model

    from billing.models import Invoice
    from billing.orders.services import invoice_mark_paid_by_transfer
    from inventory.models import Site

    if not statement.exists():
        return
    if not done:
        Site.objects.filter(code="SZ").update(lead_time_hours=LEAD_TIME_HOURS)
    finance = get_user_model().objects.get(username="admin")
    for line in statement.read_text().splitlines():
        if not line.strip() or line in done:
            continue
        number, reference = line.split()
        invoice = Invoice.objects.get(number=number)
        invoice_mark_paid_by_transfer(invoice=invoice, reference=reference, actor=finance)
        done.add(line)
        print(f"ops: marked {number} paid ({reference})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--statement", type=Path, required=True)
    parser.add_argument("--migrated", type=Path, required=True)
    args = parser.parse_args()
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import close_old_connections

    call_command("migrate_once", verbosity=0)  # collectstatic: see settings.py
    args.migrated.touch()
    data = prepare(args.keys)
    partial = args.out.with_suffix(".tmp")
    partial.write_text(json.dumps(data))
    partial.rename(args.out)
    print("ops: ready", flush=True)
    done: set[str] = set()
    while True:
        try:
            mark_paid(args.statement, done)
        except Exception:  # the database away for a moment: the next round retries
            traceback.print_exc(file=sys.stdout)
        finally:
            close_old_connections()
        time.sleep(0.5)


if __name__ == "__main__":
    main()
