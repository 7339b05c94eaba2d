"""The capacity planner's page: a GET form, then the ranked plans or the nearest miss.

Members of the organization plan (viewers too: planning changes nothing); the candidates
are the cards to buy and the cloud offers the organization sees (selectors)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from estimator.api import RequestError
from sizing_site.planner import selectors
from sizing_site.planner.forms import DEFAULTS, PlanForm
from sizing_site.planner.output import planned_data, what_if_chart
from sizing_site.planner.whatif import what_if
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Role

INITIAL = {**DEFAULTS, "users": "200", "n_plus_one": True}


@login_required
def plan(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    answer = chart = None
    if "model" in request.GET:
        form = PlanForm.from_data(request.GET, organizations=[tenant.organization])
        if form.is_valid():
            try:
                planned = form.plan(tenant=tenant)
            except RequestError as exc:
                name = selectors.form_field(exc.field)
                form.add_error(name if name in form.fields else None, exc.message)
            else:
                # An impossible service level: the field named, and the nearest miss too
                impossible = selectors.impossible_service(planned)
                for name, message in impossible.items():
                    form.add_error(name, message)
                answer = planned_data(
                    planned,
                    model_slug=form.cleaned_data["model"],
                    what_if=None if impossible else what_if(planned),
                )
                _label_fixes(answer, form)
                if answer["what_if"] is not None:
                    chart = what_if_chart(answer["what_if"])
    else:
        form = PlanForm(initial=INITIAL)
    choices = [("", "—"), *selectors.planner_model_choices([tenant.organization])]
    form.fields["model"].widget = forms.Select(choices=choices)
    context = {
        "tenant": tenant,
        "form": form,
        "answer": answer,
        "chart": chart,
        # Editors save a plan (sizing_site.planner.saved): the form posts the inputs only.
        "can_save": answer is not None and not form.errors and tenant.can(Role.EDITOR),
    }
    return render(
        request, "planner/plan.html", context, status=400 if form.is_bound and form.errors else 200
    )


def _label_fixes(answer: dict[str, Any], form: PlanForm) -> None:
    """Name each fix of the nearest miss by its form field's label."""
    miss = answer["nearest_miss"]
    for fix in miss["fixes"] if miss else []:
        field = form.fields.get(fix["field"])
        fix["label"] = str(field.label) if field is not None else fix["field"]
