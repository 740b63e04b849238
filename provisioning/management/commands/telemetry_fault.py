"""Inject a fault on a simulated node's exporter (demos, ops drills):

manage.py telemetry_fault sz-h100-03 xid --value 79 --gpu 2
manage.py telemetry_fault sz-h100-03 node_silent --seconds 300
manage.py telemetry_fault sz-h100-03 --clear
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import DomainError
from inventory.models import Node
from provisioning.telemetry import simulated
from provisioning.telemetry.exposition import FAULT_KINDS


class Command(BaseCommand):
    help = "Inject (or clear) a fault on a simulated node's telemetry."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("hostname")
        parser.add_argument("kind", nargs="?", choices=FAULT_KINDS)
        parser.add_argument("--gpu", type=int, default=None)
        parser.add_argument("--value", type=float, default=0.0)
        parser.add_argument("--seconds", type=float, default=None)
        parser.add_argument("--clear", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        node = Node.objects.filter(hostname=options["hostname"]).first()
        if node is None:
            raise CommandError(f"no node {options['hostname']!r}")
        if options["clear"]:
            self.stdout.write(f"cleared {simulated.faults_clear(node=node)} fault(s)")
            return
        if not options["kind"]:
            raise CommandError("say which fault (or --clear)")
        try:
            fault = simulated.fault_inject(
                node=node,
                kind=options["kind"],
                gpu=options["gpu"],
                value=options["value"],
                seconds=options["seconds"],
            )
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"fault {fault.pk}: {fault}")
