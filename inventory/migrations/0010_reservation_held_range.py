"""Named nodes are held from provisioning to the end of cleaning.

A reservation keeps renting ``[start_at, end_at)`` and gains the range it holds its node
for, ``[held_from, held_until)``: from the site's lead time before the start to its
cleaning time (the new ``Site.cleaning_hours``) after the end. The exclusion constraint
``reservation_no_overlap`` moves to the held range.

Existing active reservations get their buffers where the node's other active bookings
leave room (a buffer is cut short at a neighbour's held range, never overlapping it), so
the new constraint holds for every row already stored.
"""

from datetime import timedelta

import django.core.validators
from django.db import migrations, models

CREATE = """
ALTER TABLE inventory_reservation
ADD CONSTRAINT reservation_no_overlap
EXCLUDE USING gist (
    node_id WITH =,
    tstzrange(held_from, held_until, '[)') WITH &&
) WHERE (status IN ('hold', 'firm'))
"""
CREATE_OLD = """
ALTER TABLE inventory_reservation
ADD CONSTRAINT reservation_no_overlap
EXCLUDE USING gist (
    node_id WITH =,
    tstzrange(start_at, end_at, '[)') WITH &&
) WHERE (status IN ('hold', 'firm'))
"""
DROP = "ALTER TABLE inventory_reservation DROP CONSTRAINT IF EXISTS reservation_no_overlap"
ACTIVE = ("hold", "firm")


def fill_held_ranges(apps, schema_editor):
    Reservation = apps.get_model("inventory", "Reservation")
    rows = list(Reservation.objects.select_related("node__site").order_by("node_id", "start_at"))
    by_node = {}
    for r in rows:
        r.held_from, r.held_until = r.start_at, r.end_at
        if r.status in ACTIVE:
            by_node.setdefault(r.node_id, []).append(r)
    for booked in by_node.values():
        for i, r in enumerate(booked):
            site = r.node.site
            want_from = r.start_at - timedelta(hours=site.lead_time_hours)
            want_until = r.end_at + timedelta(hours=site.cleaning_hours)
            if i > 0:
                want_from = max(want_from, booked[i - 1].held_until)
            if i + 1 < len(booked):
                want_until = min(want_until, booked[i + 1].start_at)
            r.held_from = min(want_from, r.start_at)
            r.held_until = max(want_until, r.end_at)
    Reservation.objects.bulk_update(rows, ["held_from", "held_until"], batch_size=2000)


def constraint_forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)
        schema_editor.execute(CREATE)


def constraint_backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)
        schema_editor.execute(CREATE_OLD)


class Migration(migrations.Migration):
    dependencies = [("inventory", "0009_event_reason_codes")]

    operations = [
        migrations.AddField(
            model_name="site",
            name="cleaning_hours",
            field=models.PositiveIntegerField(
                default=8,
                help_text="How long cleaning takes after a rental ends (disk wipe, BIOS reset, checks): the node stays booked for this long after the end.",
                validators=[django.core.validators.MaxValueValidator(720)],
                verbose_name="cleaning time (hours)",
            ),
        ),
        migrations.AddField(
            model_name="reservation",
            name="held_from",
            field=models.DateTimeField(null=True, verbose_name="held from"),
        ),
        migrations.AddField(
            model_name="reservation",
            name="held_until",
            field=models.DateTimeField(null=True, verbose_name="held until"),
        ),
        migrations.RunPython(fill_held_ranges, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="reservation",
            name="held_from",
            field=models.DateTimeField(verbose_name="held from"),
        ),
        migrations.AlterField(
            model_name="reservation",
            name="held_until",
            field=models.DateTimeField(verbose_name="held until"),
        ),
        migrations.AddConstraint(
            model_name="reservation",
            constraint=models.CheckConstraint(
                condition=models.Q(("held_from__lte", models.F("start_at")), ("held_until__gte", models.F("end_at"))),
                name="reservation_held_covers_rental",
                violation_error_message="A reservation holds its node over its whole rental.",
            ),
        ),
        migrations.RunPython(constraint_forwards, constraint_backwards),
    ]
