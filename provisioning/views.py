"""Staff pages of a provisioning run: live progress, retry a step, send a node to swap,
cancel the run. Each action goes through a service that records an event, and each names
the permission it needs: seeing a run ``provisioning.view_provisioningrun``; retrying,
swapping and cancelling ``provisioning.change_provisioningrun`` (the seeded Operations
group has both)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from core.errors import DomainError
from provisioning import access, runs, selectors
from provisioning.models import NodeStep, ProvisioningRun
from provisioning.validation.reasons import annotate_live_checks, annotate_progress

VIEW_RUNS = "provisioning.view_provisioningrun"
OPERATE_RUNS = "provisioning.change_provisioningrun"


def staff_permission_required(
    permission: str,
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Staff with ``permission`` only: anyone else gets 403 before anything is looked up."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            user = request.user
            if not (user.is_authenticated and user.is_staff and user.has_perm(permission)):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


@staff_permission_required(VIEW_RUNS)
@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(ProvisioningRun.objects.select_related("order"), pk=run_id)
    context = {
        "progress": annotate_live_checks(annotate_progress(selectors.run_progress(run))),
        "delivery_access": access.order_access(run.order, run) if run.order_id else None,
        "staff": True,
        "poll_url": reverse("provisioning_run", args=[run.pk]),
        "events": run.events.order_by("-created_at", "-id")[:50],
    }
    if request.htmx:
        return render(request, "provisioning/_progress.html", context)
    return render(request, "provisioning/run.html", context)


def _back(run_id: int) -> HttpResponse:
    return redirect("provisioning_run", run_id=run_id)


@staff_permission_required(OPERATE_RUNS)
@require_POST
def step_retry(request: HttpRequest, run_id: int, step_id: int) -> HttpResponse:
    step = get_object_or_404(NodeStep, pk=step_id, run_id=run_id)
    try:
        runs.step_retry(step=step, actor=request.user)
        messages.success(request, _("The step runs again."))
    except DomainError as exc:
        messages.error(request, exc.message)
    return _back(run_id)


@staff_permission_required(OPERATE_RUNS)
@require_POST
def node_swap(request: HttpRequest, run_id: int, node_id: int) -> HttpResponse:
    run = get_object_or_404(ProvisioningRun, pk=run_id)
    try:
        spare = runs.node_send_to_swap(
            run=run, node_id=node_id, actor=request.user, reason=request.POST.get("reason", "")
        )
        if spare is not None:
            messages.success(request, _("Swapped for %(node)s.") % {"node": spare.node.hostname})
        else:
            messages.error(request, _("No spare is free: the run has stopped."))
    except DomainError as exc:
        messages.error(request, exc.message)
    return _back(run_id)


@staff_permission_required(OPERATE_RUNS)
@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(ProvisioningRun, pk=run_id)
    try:
        runs.run_cancel(run=run, actor=request.user, reason=request.POST.get("reason", ""))
        messages.success(request, _("The run is cancelled."))
    except DomainError as exc:
        messages.error(request, exc.message)
    return _back(run_id)
