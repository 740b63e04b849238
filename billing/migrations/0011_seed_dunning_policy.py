"""The standard dunning policy: reminders 7 and 3 days before, on and 3 days after the
due date, then suspension 10 days after it (the last reminder announces the date)."""

from django.db import migrations

STANDARD = "standard"
STEPS = [(-7, "remind"), (-3, "remind"), (0, "remind"), (3, "remind"), (10, "suspend")]


def seed(apps, schema_editor):
    Policy = apps.get_model("billing", "DunningPolicy")
    Step = apps.get_model("billing", "DunningStep")
    if Policy.objects.exists():
        return
    policy = Policy.objects.create(name=STANDARD, active=True)
    Step.objects.bulk_create(
        [Step(policy=policy, offset_days=days, action=action) for days, action in STEPS]
    )


class Migration(migrations.Migration):
    dependencies = [("billing", "0010_dunning_suspension_renewal")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
