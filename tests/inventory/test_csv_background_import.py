"""Large CSV imports: refused on the admin page above the row limit, imported whole or not
at all by a background task whose job page shows progress and errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from inventory import csv_jobs
from inventory.models import ImportJob, ImportJobStatus, Node, NodeEvent, NodeType, Site
from inventory.tasks import import_job_run_task, import_job_sweep_task
from tests import factories
from tests.inventory.test_csv_import import (
    admin_url,
    nodes_csv,
    page,
    upload,
)

pytestmark = pytest.mark.django_db

TASK = "inventory.tasks.import_job_run_task"


def node_rows(count: int, *, bad_line: int | None = None) -> str:
    """``count`` good node rows; the row on file line ``bad_line`` names an unknown rack."""
    rows = []
    for i in range(1, count + 1):
        rack = "R99" if bad_line == i + 1 else f"R0{1 + i % 2}"
        rows.append(f"sz-gpu-{i:05d},SN-{i:05d},,SZ,{rack},leaf-1,h100-8x,")
    return nodes_csv(*rows)


@pytest.fixture
def inventory(sz: Site, h100: NodeType) -> Site:
    factories.rack(sz, "R01")
    factories.rack(sz, "R02")
    factories.leaf(sz, "leaf-1")
    return sz


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """What the background import hands to Celery (task name and arguments)."""
    calls: list[tuple] = []
    monkeypatch.setattr(csv_jobs.jobs, "enqueue", lambda name, *args: calls.append((name, *args)))
    return calls


def upload_background(client: Client, model: str, content: str, name: str = "big.csv"):
    return client.post(
        admin_url(f"admin:inventory_{model}_import_background"),
        {"import_file": SimpleUploadedFile(name, content.encode(), content_type="text/csv")},
    )


# --- The admin page refuses more rows than its limit ---------------------------------------


def test_5001_rows_are_refused_on_the_admin_page_with_the_limit_and_the_count(
    admin_client, inventory, settings
):
    assert settings.INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS == 5000, "the default"

    response = upload(admin_client, "node", node_rows(5001))

    html = page(response)
    assert response.status_code == 200
    assert (
        "This file has 5,001 rows; an import on this page takes at most 5,000 rows. "
        "Nothing was imported." in html
    )
    assert "Import in the background" in html
    assert "Confirm import" not in html
    assert Node.objects.count() == 0


def test_the_limit_is_a_setting(admin_client, inventory, settings):
    settings.INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS = 10

    assert "Confirm import" in page(upload(admin_client, "node", node_rows(10)))

    refused = page(upload(admin_client, "node", node_rows(11)))
    assert "This file has 11 rows; an import on this page takes at most 10 rows." in refused
    assert "Confirm import" not in refused


def test_import_page_links_to_the_background_import(admin_client, inventory):
    html = page(admin_client.get(admin_url("admin:inventory_node_import")))

    assert admin_url("admin:inventory_node_import_background") in html
    assert "up to 5,000 rows" in html


# --- The background import -----------------------------------------------------------------


def test_large_file_is_imported_in_the_background(
    admin_client, admin_user, inventory, settings, media, enqueued
):
    settings.INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS = 10
    content = node_rows(25)
    assert "Nothing was imported" in page(upload(admin_client, "node", content))

    response = upload_background(admin_client, "node", content, name="hall-b.csv")

    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == admin_url("admin:inventory_importjob_change", job.pk)
    assert enqueued == [(TASK, job.pk)], "the task gets the job's id, after the commit"
    assert (job.kind, job.file_name, job.status) == ("node", "hall-b.csv", "pending")
    assert (job.rows_total, job.created_by) == (25, admin_user)
    assert job.file.read().decode() == content, "stored for the worker"
    assert Node.objects.count() == 0, "nothing is imported in the request"
    waiting = page(admin_client.get(response["Location"]))
    assert '<meta http-equiv="refresh"' in waiting
    assert "0 of 25 rows checked (0%)" in waiting

    assert import_job_run_task.apply(args=(job.pk,)).get() == ImportJobStatus.DONE

    job.refresh_from_db()
    assert job.status == ImportJobStatus.DONE
    assert (job.rows_done, job.rows_new, job.errors) == (25, 25, [])
    assert job.started_at and job.finished_at
    assert Node.objects.count() == 25
    event = NodeEvent.objects.get(node__hostname="sz-gpu-00007")
    assert event.actor == admin_user
    assert "hall-b.csv" in event.reason and "line 8" in event.reason
    done = page(admin_client.get(admin_url("admin:inventory_importjob_change", job.pk)))
    assert '<meta http-equiv="refresh"' not in done
    assert "25 of 25 rows checked (100%)" in done


def test_one_bad_row_among_many_imports_nothing_and_records_its_line(
    admin_client, inventory, media, enqueued
):
    upload_background(admin_client, "node", node_rows(40, bad_line=27))
    job = ImportJob.objects.get()

    import_job_run_task.apply(args=(job.pk,)).get()

    job.refresh_from_db()
    assert job.status == ImportJobStatus.FAILED
    assert Node.objects.count() == 0, "all or nothing"
    assert NodeEvent.objects.count() == 0
    assert job.errors == ["Line 27: column “rack”: Unknown rack “R99” in site “SZ”."]
    assert (job.rows_new, job.rows_done) == (0, 40)
    html = page(admin_client.get(admin_url("admin:inventory_importjob_change", job.pk)))
    assert "Line 27: column “rack”: Unknown rack “R99” in site “SZ”." in html


def test_running_the_task_twice_does_no_harm(admin_client, inventory, media, enqueued):
    upload_background(admin_client, "node", node_rows(12))
    job = ImportJob.objects.get()

    import_job_run_task.apply(args=(job.pk,)).get()
    assert import_job_run_task.apply(args=(job.pk,)).get() == ImportJobStatus.DONE

    assert Node.objects.count() == 12
    assert NodeEvent.objects.count() == 12


def test_progress_is_reported_while_the_rows_are_checked(
    admin_client, inventory, media, enqueued, monkeypatch
):
    upload_background(admin_client, "node", node_rows(25))
    job = ImportJob.objects.get()
    monkeypatch.setattr(csv_jobs, "PROGRESS_EVERY_ROWS", 10)
    resource_class, _csv_format = csv_jobs.IMPORTS["node"]
    import_row = resource_class.import_row
    shown: list[int] = []  # what the job's page says after each row

    def import_row_and_look(self, *args, **kwargs):
        result = import_row(self, *args, **kwargs)
        shown.append(csv_jobs.import_job_rows_done(ImportJob.objects.get(pk=job.pk)))
        return result

    monkeypatch.setattr(resource_class, "import_row", import_row_and_look)

    csv_jobs.import_job_run(job_id=job.pk)

    assert shown == [0] * 9 + [10] * 10 + [20] * 5 + [25]
    assert csv_jobs.import_job_rows_done(ImportJob.objects.get(pk=job.pk)) == 25


def test_running_job_page_shows_the_rows_checked_so_far(admin_client, inventory, media, enqueued):
    upload_background(admin_client, "node", node_rows(25))
    job = ImportJob.objects.get()
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJobStatus.RUNNING)
    csv_jobs.cache.set(csv_jobs._progress_key(job.pk), 10)

    html = page(admin_client.get(admin_url("admin:inventory_importjob_change", job.pk)))
    listing = page(admin_client.get(admin_url("admin:inventory_importjob_changelist")))

    assert "10 of 25 rows checked (40%)" in html
    assert '<meta http-equiv="refresh"' in html
    assert "10 of 25 rows checked (40%)" in listing
    assert '<meta http-equiv="refresh"' in listing


def test_an_import_over_its_time_budget_is_stopped_and_keeps_nothing(
    admin_client, inventory, media, enqueued
):
    upload_background(admin_client, "node", node_rows(12))
    job = ImportJob.objects.get()

    csv_jobs.import_job_run(job_id=job.pk, time_budget_s=0)

    job.refresh_from_db()
    assert job.status == ImportJobStatus.FAILED
    assert job.errors == [
        "The import took too long and was stopped after 1 row. Nothing was imported."
    ]
    assert Node.objects.count() == 0


def test_a_file_that_is_not_the_expected_csv_is_refused_at_upload(
    admin_client, inventory, media, enqueued
):
    response = upload_background(admin_client, "node", "hostname,colour\nx,blue\n")

    assert response.status_code == 200
    assert "The file lacks the columns" in page(response)
    assert not ImportJob.objects.exists()
    assert enqueued == []


def test_switches_import_in_the_background_too(admin_client, inventory, media, enqueued):
    content = "site,name,role,fabric,port_speed_gbps\n" + "".join(
        f"SZ,leaf-{i},leaf,ib_ndr,400\n" for i in range(10, 22)
    )
    upload_background(admin_client, "switch", content)
    job = ImportJob.objects.get()

    import_job_run_task.apply(args=(job.pk,)).get()

    job.refresh_from_db()
    assert (job.kind, job.status, job.rows_new) == ("switch", ImportJobStatus.DONE, 12)


def test_importing_needs_permission_to_add_and_change_nodes(
    client, inventory, django_user_model, media, enqueued
):
    staff = django_user_model.objects.create_user("clerk", "clerk@example.com", "pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_node"))
    client.force_login(staff)

    assert client.get(admin_url("admin:inventory_node_import_background")).status_code == 403
    assert client.get(admin_url("admin:inventory_node_import")).status_code == 403

    staff.user_permissions.add(*Permission.objects.filter(codename__in=["add_node", "change_node"]))
    assert upload_background(client, "node", node_rows(3)).status_code == 302
    assert ImportJob.objects.get().created_by == staff


def test_sweep_hands_lost_jobs_out_again(admin_client, inventory, media, enqueued, settings):
    assert "inventory-import-job-sweep" in settings.CELERY_BEAT_SCHEDULE
    for _ in range(4):
        upload_background(admin_client, "node", node_rows(3))
    fresh, lost_waiting, lost_running, finished = ImportJob.objects.order_by("pk")
    long_ago = timezone.now() - timedelta(hours=2)
    ImportJob.objects.filter(pk=lost_waiting.pk).update(created_at=long_ago)
    ImportJob.objects.filter(pk=lost_running.pk).update(
        status=ImportJobStatus.RUNNING, created_at=long_ago, started_at=long_ago
    )
    ImportJob.objects.filter(pk=finished.pk).update(
        status=ImportJobStatus.DONE, created_at=long_ago
    )
    enqueued.clear()

    assert import_job_sweep_task.apply().get() == 2

    assert enqueued == [(TASK, lost_waiting.pk), (TASK, lost_running.pk)]
    assert fresh.pk not in [args[1] for args in enqueued]


@pytest.mark.parametrize("count", [2, 20])
def test_job_list_runs_a_fixed_number_of_queries(
    admin_client, admin_user, django_assert_max_num_queries, count
):
    for i in range(count):
        ImportJob.objects.create(
            kind="node", file_name=f"f{i}.csv", rows_total=9, created_by=admin_user
        )

    with django_assert_max_num_queries(9):
        response = admin_client.get(admin_url("admin:inventory_importjob_changelist"))

    assert response.status_code == 200
    assert page(response).count("0 of 9 rows checked") == count
