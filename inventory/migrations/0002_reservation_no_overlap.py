"""No double booking, enforced by PostgreSQL.

Two active reservations (hold or firm) of one node may not overlap: an exclusion
constraint over (node_id WITH =, tstzrange(start_at, end_at, '[)') WITH &&). It lives in
a migration rather than in ``Reservation.Meta`` so that SQLite (the embedded default)
can run the same models; there ``inventory.services.reservation_hold`` is the guard.
"""

from django.db import migrations

CREATE = """
ALTER TABLE inventory_reservation
ADD CONSTRAINT reservation_no_overlap
EXCLUDE USING gist (
    node_id WITH =,
    tstzrange(start_at, end_at, '[)') WITH &&
) WHERE (status IN ('hold', 'firm'))
"""
DROP = "ALTER TABLE inventory_reservation DROP CONSTRAINT IF EXISTS reservation_no_overlap"


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("inventory", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
