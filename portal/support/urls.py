"""The support desk's routes: the customer's (under ``account/``), staff's (under
``staff/support/``) and the public status pages (under ``status/``)."""

from django.urls import path

from portal.support.views import customer, staff, status

customer_urlpatterns = [
    path("support/", customer.ticket_list, name="support_tickets"),
    path("support/new", customer.ticket_new, name="support_ticket_new"),
    path("support/<int:ticket_id>/", customer.ticket_detail, name="support_ticket"),
    path("support/<int:ticket_id>/reply", customer.ticket_reply, name="support_ticket_reply"),
    path("status/", customer.customer_status, name="support_customer_status"),
]

staff_urlpatterns = [
    path("", staff.queue, name="support_staff_queue"),
    path("missed/", staff.missed, name="support_staff_missed"),
    path("tickets/<int:ticket_id>/", staff.ticket_detail, name="support_staff_ticket"),
    path("tickets/<int:ticket_id>/reply", staff.ticket_reply, name="support_staff_reply"),
    path("tickets/<int:ticket_id>/note", staff.ticket_note, name="support_staff_note"),
    path("tickets/<int:ticket_id>/assign", staff.ticket_assign, name="support_staff_assign"),
    path("tickets/<int:ticket_id>/priority", staff.ticket_priority, name="support_staff_priority"),
    path("tickets/<int:ticket_id>/resolve", staff.ticket_resolve, name="support_staff_resolve"),
    path("incidents/", staff.incidents, name="support_staff_incidents"),
    path("incidents/new", staff.incident_new, name="support_staff_incident_new"),
    path("incidents/<int:incident_id>/", staff.incident_detail, name="support_staff_incident"),
    path(
        "incidents/<int:incident_id>/update",
        staff.incident_update,
        name="support_staff_incident_update",
    ),
]

status_urlpatterns = [
    path("", status.index, name="status_index"),
    path("<slug:code>/", status.site, name="status_site"),
]
