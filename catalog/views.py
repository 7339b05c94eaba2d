from __future__ import annotations

from django import forms
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from catalog import hardware, selectors
from catalog.forms import (
    GGUF_HEADER_BYTES,
    MAX_WHOLE_GGUF_BYTES,
    AcceleratorFilterForm,
    ConfigImportForm,
    GGUFUploadForm,
    ModelFilterForm,
)
from catalog.models import Accelerator, LLMModel
from catalog.services import CatalogError
from catalog.services.configs import MAX_CONFIG_BYTES, config_parse_text, model_import_config
from catalog.services.gguf import weights_import_gguf


@login_required
def model_list(request: HttpRequest) -> HttpResponse:
    form = ModelFilterForm(
        request.GET,
        families=selectors.model_families(),
        publishers=selectors.model_publishers(),
    )
    filters = form.cleaned_data if form.is_valid() else {}
    models = selectors.model_list(**filters)
    page = Paginator(models, selectors.PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "catalog/model_list.html", {"form": form, "page": page})


@login_required
def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        model = selectors.model_detail(slug=slug)
    except LLMModel.DoesNotExist:
        raise Http404 from None
    return render(request, "catalog/model_detail.html", {"model": model})


@login_required
def accelerator_list(request: HttpRequest) -> HttpResponse:
    form = AcceleratorFilterForm(request.GET, vendors=selectors.accelerator_vendors())
    filters = form.cleaned_data if form.is_valid() else {}
    accelerators = selectors.accelerator_list(**filters)
    page = Paginator(accelerators, selectors.PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "catalog/accelerator_list.html", {"form": form, "page": page})


@login_required
def accelerator_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        accelerator = selectors.accelerator_detail(slug=slug)
    except Accelerator.DoesNotExist:
        raise Http404 from None
    engines = hardware.support_matrix().default_first(accelerator)
    context = {"accelerator": accelerator, "engines": engines}
    return render(request, "catalog/accelerator_detail.html", context)


def _body_over(request: HttpRequest, limit: int) -> bool:
    """Whether the declared body is over `limit`, checked before Django reads any of it
    (request.POST and request.FILES pull the whole upload to disk first)."""
    length = request.META.get("CONTENT_LENGTH") or "0"
    return not (length.isascii() and length.isdecimal()) or int(length) > limit


def _too_large(request: HttpRequest, template: str, form: forms.Form) -> HttpResponse:
    form.is_valid()  # bound to nothing: only this one error is shown
    form.errors.clear()
    form.add_error(None, _("The upload is too large."))
    return render(request, template, {"form": form, "header_bytes": GGUF_HEADER_BYTES}, status=400)


@staff_member_required
def gguf_upload(request: HttpRequest) -> HttpResponse:
    # A whole file up to its cap, plus the form's other fields and multipart framing.
    if request.method == "POST" and _body_over(request, MAX_WHOLE_GGUF_BYTES + 64 * 1024):
        return _too_large(request, "catalog/gguf_upload.html", GGUFUploadForm({}))
    form = GGUFUploadForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST" and form.is_valid():
        upload, data = form.cleaned_data["file"], form.cleaned_data
        # A header-only upload carries the real file's size from the browser.
        size = data["file_size"] if data["header_only"] else upload.size
        model = data["model"]
        try:
            result = weights_import_gguf(
                stream=upload,
                file_name=upload.name or "upload.gguf",
                file_size=size,
                model_slug=model.slug if model else "",
            )
        except CatalogError as exc:
            form.add_error(None, exc.message)
    template = "catalog/gguf_upload.html"
    if getattr(request, "htmx", False):
        template += "#result"
    context = {"form": form, "result": result, "header_bytes": GGUF_HEADER_BYTES}
    return render(request, template, context, status=400 if form.errors else 200)


@staff_member_required
def config_import(request: HttpRequest) -> HttpResponse:
    # Pasted text and a file, each up to the cap (pasted text may be escaped to 3 bytes a
    # character by the browser's form encoding), plus the small fields.
    if request.method == "POST" and _body_over(request, 4 * MAX_CONFIG_BYTES + 64 * 1024):
        return _too_large(request, "catalog/config_import.html", ConfigImportForm({}))
    form = ConfigImportForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            config = config_parse_text(text=form.config_text())
            result = model_import_config(
                config=config,
                slug=data["slug"],
                hf_repo=data["hf_repo"],
                name=data["name"],
                replace=data["replace"],
            )
        except CatalogError as exc:
            form.add_error(None, exc.message)
    context = {"form": form, "result": result}
    return render(
        request, "catalog/config_import.html", context, status=400 if form.errors else 200
    )
