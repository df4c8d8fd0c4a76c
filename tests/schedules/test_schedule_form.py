"""Creating a schedule in the admin as platform staff (bin/start's admin is a superuser): the
organization is chosen on the form (forgetting it is a form error, never a 500), the persona is
picked from the loaded personas by kind, and a missing or doubled timetable says which (issue 29,
finding 6)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from schedules_app.models import Schedule

pytestmark = pytest.mark.django_db

ADD = "admin:schedules_app_schedule_add"
FORM = {
    "name": "disk check",
    "kind": "inspection",
    "enabled": "on",
    "persona": "specialist-disk",
    "prompt": "Check free space.",
    "open_incidents": "on",
    "period": "weekly",
    "cron": "0 7 * * *",
    "interval_minutes": "",
    "timezone": "UTC",
}


@pytest.fixture
def staff(client):
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")
    client.force_login(root)
    return client


def add(client, **changes):
    return client.post(reverse(ADD), {**FORM, **changes})


def errors_of(response) -> str:
    assert response.status_code == 200  # the form again, with its errors: no 500, nothing saved
    return " ".join(" ".join(map(str, e)) for e in response.context["adminform"].form.errors.values())


def test_platform_staff_choose_the_organization(staff, org):
    assert 'name="organization"' in staff.get(reverse(ADD)).content.decode()
    response = add(staff, organization=org.pk)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Schedule.objects.get(name="disk check").organization_id == org.pk


def test_platform_staff_who_forget_the_organization_get_a_form_error(staff, org):
    assert "This field is required" in errors_of(add(staff))
    assert not Schedule.objects.exists()


def test_an_org_admin_is_not_asked_for_an_organization(client, org, org_admin):
    client.force_login(org_admin)
    assert 'name="organization"' not in client.get(reverse(ADD)).content.decode()
    assert add(client).status_code == 302
    assert Schedule.objects.get(name="disk check").organization_id == org.pk


@pytest.mark.parametrize(
    "cron, interval, message",
    [
        ("", "", "Give a cron expression or an interval."),
        ("0 7 * * *", "30", "Give either a cron expression or an interval, not both."),
    ],
)
def test_neither_or_both_timetables_say_which(staff, org, cron, interval, message):
    assert message in errors_of(add(staff, organization=org.pk, cron=cron, interval_minutes=interval))


def test_the_persona_is_picked_from_loaded_personas_by_kind(staff, org):
    page = staff.get(reverse(ADD)).content.decode()
    assert '<select name="persona"' in page
    inspection, report = page.split('<optgroup label="Inspection">')[1].split('<optgroup label="Report">')
    assert 'value="specialist-disk"' in inspection and 'value="reporter"' not in inspection
    assert 'value="reporter"' in report.split("</optgroup>")[0]
    assert 'value="default"' not in page  # the coordinator never runs a schedule
    assert "is not one of the available choices" in errors_of(add(staff, organization=org.pk, persona="typo"))
    no_persona = errors_of(add(staff, organization=org.pk, persona=""))
    assert "Choose the read-only specialist that runs the inspection." in no_persona


def test_a_report_runs_the_reporter_whatever_was_picked(staff, org):
    response = add(staff, organization=org.pk, name="weekly", kind="report", persona="", prompt="")
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Schedule.objects.get(name="weekly").persona == "reporter"


def test_staff_with_an_organization_start_on_it_and_may_pick_another(client, org, other_org):
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import set_membership

    root = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")
    set_membership(root, other_org, roles.ORG_ADMIN)  # like bin/start's admin and its demo organization
    client.force_login(root)
    page = client.get(reverse(ADD)).content.decode()
    assert f'<option value="{other_org.pk}" selected>' in page
    assert add(client, organization=org.pk).status_code == 302
    assert Schedule.objects.get(name="disk check").organization_id == org.pk


def test_an_existing_schedule_keeps_a_persona_no_longer_offered(client, org, org_admin):
    from tests.support.schedules import make_schedule

    schedule = make_schedule(org)
    Schedule.objects.filter(pk=schedule.pk).update(persona="retired-specialist")
    client.force_login(org_admin)
    page = client.get(reverse("admin:schedules_app_schedule_change", args=[schedule.pk])).content.decode()
    assert '<option value="retired-specialist" selected>' in page


def test_an_org_admin_cannot_list_another_organizations_agents_by_forging_it(
    client, org, other_org, org_admin
):
    from tests.support.gate import make_user_agent

    make_user_agent(other_org, "globex-secret-checker", "read-only", ["query_promql"])
    client.force_login(org_admin)
    response = add(client, organization=other_org.pk, persona="globex-secret-checker")
    assert "is not one of the available choices" in errors_of(response)
    assert 'value="globex-secret-checker"' not in response.content.decode()  # not offered either
