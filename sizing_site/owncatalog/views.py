"""The own-catalog pages: an organisation's own models (imported from a config.json, a
GGUF header or a Hugging Face repository) and accelerators. Viewers read; editors add and
edit; admins delete. The tenant is resolved before the method is read, so an outsider gets
the same 404 whatever the method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from catalog.models import Accelerator, LLMModel
from catalog.services.common import CatalogError
from catalog.services.configs import config_parse_text
from sizing_site.owncatalog import selectors, services
from sizing_site.owncatalog.forms import (
    GGUF_HEADER_BYTES,
    MAX_MODEL_POST_BYTES,
    HubImportForm,
    OwnAcceleratorForm,
    OwnModelEditForm,
    OwnModelForm,
)
from sizing_site.tenancy.access import Tenant, tenant_for
from sizing_site.tenancy.models import Role

T = "owncatalog/"


def _body_over(request: HttpRequest, limit: int) -> bool:
    """Whether the declared body is over `limit`, checked before Django reads any of it."""
    length = request.META.get("CONTENT_LENGTH") or "0"
    return not (length.isascii() and length.isdecimal()) or int(length) > limit


def _add_errors(
    form: forms.BaseForm, exc: ValidationError | CatalogError, field: str | None = None
) -> None:
    """A service's refusal on the form: a CatalogError on `field` (the input it is about),
    a ValidationError on the fields it names."""
    if isinstance(exc, CatalogError):
        form.add_error(field, exc.message)
        return
    for field, errors in services.validation_errors(exc).items():
        form.add_error(field if field in form.fields else None, errors)


def _saved(
    request: HttpRequest,
    form: forms.BaseForm,
    save: Callable[[], LLMModel | Accelerator],
    message: str,
    to: str,
    org_slug: str,
) -> HttpResponse | None:
    """Run `save` (a service call) for a valid form: a redirect to the list `to` with
    `message` naming the saved row, or None to show the form again (its errors added)."""
    if not form.is_valid():
        return None
    try:
        row = save()
    except ValidationError as exc:
        _add_errors(form, exc)
        return None
    messages.success(request, message % {"name": row.name})
    return redirect(to, org_slug=org_slug)


def _history(
    request: HttpRequest, tenant: Tenant, row: LLMModel | Accelerator, kind: str
) -> HttpResponse:
    context = {
        "tenant": tenant,
        "row": row,
        "kind": kind,
        "entries": selectors.row_history(row=row),
    }
    return render(request, T + "history.html", context)


# --- models ----------------------------------------------------------------------------


@login_required
def models(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    context = {
        "tenant": tenant,
        "rows": selectors.own_model_list(tenant=tenant).prefetch_related("weights"),
        "can_edit": tenant.can(Role.EDITOR),
        "can_delete": tenant.can(Role.ADMIN),
    }
    return render(request, T + "models.html", context)


def _model_form(
    request: HttpRequest,
    tenant: Tenant,
    form: forms.Form,
    model: LLMModel | None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "tenant": tenant,
        "form": form,
        "model": model,
        "header_bytes": GGUF_HEADER_BYTES,
    }
    return render(request, T + "model_form.html", context, status=status)


def _import(request: HttpRequest, tenant: Tenant, form: OwnModelForm) -> LLMModel:
    data = form.cleaned_data
    common = {
        "tenant": tenant,
        "user": request.user,
        "name": data["name"],
        "hf_repo": data["hf_repo"],
        "notes": data["notes"],
    }
    upload = data.get("gguf_file")
    if upload:
        size = data["file_size"] if data["header_only"] else upload.size
        return services.own_model_import_gguf(
            stream=upload, file_name=upload.name or "upload.gguf", file_size=size, **common
        )
    config = config_parse_text(text=form.config_source())
    return services.own_model_import_config(config=config, **common)


@login_required
def model_new(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug, min_role=Role.EDITOR)
    if request.method == "GET":
        return _model_form(request, tenant, OwnModelForm(), None)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    if _body_over(request, MAX_MODEL_POST_BYTES):
        form = OwnModelForm({})
        form.is_valid()  # bound to nothing: only this one error is shown
        form.errors.clear()
        form.add_error(None, _("The upload is too large."))
        return _model_form(request, tenant, form, None, status=400)
    form = OwnModelForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            model = _import(request, tenant, form)
        except (CatalogError, ValidationError) as exc:
            data = form.cleaned_data
            given = [k for k in ("gguf_file", "config_file", "config_text") if data.get(k)]
            _add_errors(form, exc, given[0] if given else None)
        else:
            messages.success(request, _("Added “%(name)s”.") % {"name": model.name})
            return redirect("owncatalog:models", org_slug=org_slug)
    return _model_form(request, tenant, form, None, status=400)


@login_required
def model_hub(request: HttpRequest, org_slug: str) -> HttpResponse:
    """Size a Hugging Face model: import it by repository id into the organisation's own
    models (editors), then open it on every card."""
    tenant = tenant_for(request.user, org_slug, min_role=Role.EDITOR)
    if request.method == "GET":
        form = HubImportForm(initial={"repo_id": request.GET.get("repo", "")[:200]})
        return render(request, T + "model_hub.html", {"tenant": tenant, "form": form})
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    form = HubImportForm(request.POST)
    if form.is_valid():
        try:
            result = services.own_model_import_hub(
                tenant=tenant,
                user=request.user,
                repo_id=form.cleaned_data["repo_id"],
                revision=form.cleaned_data["revision"],
            )
        except (CatalogError, ValidationError) as exc:
            _add_errors(form, exc, "repo_id")
        else:
            names = {"name": result.model.name, "repo": result.repo.repo_id}
            done = (
                _("Added “%(name)s” from %(repo)s.")
                if result.created
                else _("Updated “%(name)s” from %(repo)s.")
            )
            messages.success(request, done % names)
            if result.notes:
                # A repository of many oddly named files gives many notes: the first few.
                notes = "; ".join(result.notes[:5]) + (" …" if len(result.notes) > 5 else "")
                messages.warning(request, _("Left out: %(notes)s") % {"notes": notes})
            return redirect("explore:model-gpus", result.model.slug)
    return render(request, T + "model_hub.html", {"tenant": tenant, "form": form}, status=400)


@login_required
def model_edit(request: HttpRequest, org_slug: str, slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug, min_role=Role.EDITOR)
    model = selectors.own_model_get(tenant=tenant, slug=slug)
    if request.method == "GET":
        initial = {"name": model.name, "notes": model.notes}
        return _model_form(request, tenant, OwnModelEditForm(initial=initial), model)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    form = OwnModelEditForm(request.POST)
    done = _saved(
        request,
        form,
        lambda: services.own_model_update(
            tenant=tenant, user=request.user, model=model, values=form.cleaned_data
        ),
        _("Saved “%(name)s”."),
        "owncatalog:models",
        org_slug,
    )
    if done is not None:
        return done
    return _model_form(request, tenant, form, model, status=400)


@login_required
def model_delete(request: HttpRequest, org_slug: str, slug: str) -> HttpResponse:
    """GET: the confirm page; POST: delete (admins)."""
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
    model = selectors.own_model_get(tenant=tenant, slug=slug)
    context: dict[str, Any] = {"tenant": tenant, "row": model, "kind": "model"}
    if request.method == "GET":
        return render(request, T + "delete.html", context)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    services.own_model_delete(tenant=tenant, user=request.user, model=model)
    messages.success(request, _("Deleted “%(name)s”.") % {"name": model.name})
    return redirect("owncatalog:models", org_slug=org_slug)


@login_required
def model_history(request: HttpRequest, org_slug: str, slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    return _history(request, tenant, selectors.own_model_get(tenant=tenant, slug=slug), "model")


# --- accelerators ----------------------------------------------------------------------


@login_required
def accelerators(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    context = {
        "tenant": tenant,
        "rows": selectors.own_accelerator_list(tenant=tenant),
        "can_edit": tenant.can(Role.EDITOR),
        "can_delete": tenant.can(Role.ADMIN),
    }
    return render(request, T + "accelerators.html", context)


def _accelerator_form(
    request: HttpRequest,
    tenant: Tenant,
    form: OwnAcceleratorForm,
    accelerator: Accelerator | None,
    status: int = 200,
) -> HttpResponse:
    context = {"tenant": tenant, "form": form, "accelerator": accelerator}
    return render(request, T + "accelerator_form.html", context, status=status)


@login_required
def accelerator_new(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug, min_role=Role.EDITOR)
    if request.method == "GET":
        return _accelerator_form(request, tenant, OwnAcceleratorForm(), None)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    form = OwnAcceleratorForm(request.POST)
    done = _saved(
        request,
        form,
        lambda: services.own_accelerator_create(
            tenant=tenant, user=request.user, values=form.cleaned_data
        ),
        _("Added “%(name)s”."),
        "owncatalog:accelerators",
        org_slug,
    )
    if done is not None:
        return done
    return _accelerator_form(request, tenant, form, None, status=400)


@login_required
def accelerator_edit(request: HttpRequest, org_slug: str, slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug, min_role=Role.EDITOR)
    row = selectors.own_accelerator_get(tenant=tenant, slug=slug)
    if request.method == "GET":
        return _accelerator_form(request, tenant, OwnAcceleratorForm(instance=row), row)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    form = OwnAcceleratorForm(request.POST, instance=row)
    done = _saved(
        request,
        form,
        lambda: services.own_accelerator_update(
            tenant=tenant, user=request.user, accelerator=row, values=form.cleaned_data
        ),
        _("Saved “%(name)s”."),
        "owncatalog:accelerators",
        org_slug,
    )
    if done is not None:
        return done
    return _accelerator_form(request, tenant, form, row, status=400)


@login_required
def accelerator_delete(request: HttpRequest, org_slug: str, slug: str) -> HttpResponse:
    """GET: the confirm page (naming the machines that use it); POST: delete (admins)."""
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
    row = selectors.own_accelerator_get(tenant=tenant, slug=slug)
    context: dict[str, Any] = {
        "tenant": tenant,
        "row": row,
        "kind": "accelerator",
        "machines": services.accelerator_machines(tenant=tenant, accelerator=row),
    }
    if request.method == "GET":
        return render(request, T + "delete.html", context)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    try:
        services.own_accelerator_delete(tenant=tenant, user=request.user, accelerator=row)
    except CatalogError as exc:
        context["error"] = exc.message
        return render(request, T + "delete.html", context, status=400)
    messages.success(request, _("Deleted “%(name)s”.") % {"name": row.name})
    return redirect("owncatalog:accelerators", org_slug=org_slug)


@login_required
def accelerator_history(request: HttpRequest, org_slug: str, slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    row = selectors.own_accelerator_get(tenant=tenant, slug=slug)
    return _history(request, tenant, row, "accelerator")
