from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlencode

from django import forms
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from catalog import hardware, selectors, sizing
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
from estimator.units import GIB

# --- links from the detail pages to the sizing views --------------------------------------
# A starting point for the configurator and compare links: a well-known card (or a few of
# the largest) big enough for the model at Q4_K_M, and the largest of a few well-known
# models that a card holds at Q4_K_M. A rough guess from the parameter count (no sizing
# on a catalog page); the configurator then shows the real verdict and lets the user
# change everything.
DEFAULT_CARDS = (
    "nvidia-geforce-rtx-3060-12gb",
    "nvidia-geforce-rtx-4090",
    "nvidia-geforce-rtx-5090",
    "nvidia-h100-pcie-80gb",
    "nvidia-h200-sxm-141gb",
)
DEFAULT_MODELS = (
    "llama-3-2-3b-instruct",
    "llama-3-1-8b-instruct",
    "qwen3-14b",
    "qwen3-32b",
    "llama-3-3-70b-instruct",
    "gpt-oss-120b",
    "qwen3-235b-a22b",
    "deepseek-r1",
)
COMPARE_QUANT = "Q4_K_M"
Q4_BYTES_PER_PARAMETER = 4.85 / 8  # Q4_K_M averages about 4.85 bits a weight
HEADROOM = 1.2  # KV cache at a modest context and the engine's overhead
USABLE_SHARE = 0.9  # what an engine may use of a card's memory
MAX_GPUS = 8


def q4_need_gib(parameters: float) -> float:
    """Roughly what a model of `parameters` needs at Q4_K_M, in GiB."""
    return parameters * Q4_BYTES_PER_PARAMETER * HEADROOM / GIB


def usable_gib(card: Accelerator) -> float:
    return (card.capacity_gib or 0) * USABLE_SHARE


@dataclass(frozen=True)
class SizingLinks:
    card: Accelerator  # the configurator's card for a model page
    gpus: int
    compare_query: str


def _compare_query(columns: list[tuple[str, str, int]]) -> str:
    params = {
        f"c{i}": f"{model}:{card}:{COMPARE_QUANT}:{gpus}"
        for i, (model, card, gpus) in enumerate(columns, start=1)
    }
    return urlencode(params, safe=":")


def model_sizing_links(model: LLMModel) -> SizingLinks | None:
    """The model page's configurator card and compare columns; None when the model cannot
    be sized (no config.json) or no default card is in the catalog. One query."""
    if not model.config or sizing.model_context_limit(model) is None:
        return None
    cards = sorted(
        Accelerator.objects.filter(slug__in=DEFAULT_CARDS).only(
            "slug", "name", "vendor", "memory_gb", "memory_gib"
        ),
        key=usable_gib,
    )
    cards = [c for c in cards if usable_gib(c) > 0]
    if not cards:
        return None
    need = q4_need_gib(model.params_total or model.params_total_published or 0)
    index = next((i for i, c in enumerate(cards) if usable_gib(c) >= need), None)
    if index is None:  # more than the largest card: several of it
        card = cards[-1]
        gpus = min(MAX_GPUS, math.ceil(need / usable_gib(card)))
        columns = [(model.slug, card.slug, gpus)]
    else:
        card, gpus = cards[index], 1
        columns = [(model.slug, card.slug, 1)]
        if index + 1 < len(cards):
            columns.append((model.slug, cards[index + 1].slug, 1))
        elif index > 0:
            columns.insert(0, (model.slug, cards[index - 1].slug, 1))
    return SizingLinks(card, gpus, _compare_query(columns))


@dataclass(frozen=True)
class CardLinks:
    model: LLMModel | None  # the configurator's model for a card page
    compare_query: str


def card_sizing_links(accelerator: Accelerator, *, engines: bool) -> CardLinks | None:
    """The card page's configurator model and compare columns; None when the portal cannot
    size the card (memory or bandwidth unknown). One query."""
    if not (accelerator.memory_gb and accelerator.bandwidth_gbps):
        return None
    models = sorted(
        LLMModel.objects.filter(slug__in=DEFAULT_MODELS)
        .exclude(config={})
        .only("slug", "name", "params_total", "params_total_published"),
        key=lambda m: m.params_total or m.params_total_published or 0,
    )
    if not models or not engines:
        return CardLinks(None, "")
    room = usable_gib(accelerator)
    fitting = [m for m in models if q4_need_gib(m.params_total or 0) <= room]
    model = fitting[-1] if fitting else models[0]
    columns = [(model.slug, accelerator.slug, 1)]
    bigger = models[models.index(model) + 1 :]
    if bigger:
        columns.append((bigger[0].slug, accelerator.slug, 1))
    return CardLinks(model, _compare_query(columns))


@login_required
def model_list(request: HttpRequest) -> HttpResponse:
    form = ModelFilterForm(
        request.GET,
        families=selectors.model_families(),
        publishers=selectors.model_publishers(),
    )
    filters = form.cleaned_data if form.is_valid() else {}
    # Whether a row links to "which GPUs run it" (a model without a config.json cannot be
    # sized), computed in the list's own query.
    sizable = ExpressionWrapper(~Q(config={}), output_field=BooleanField())
    models = selectors.model_list(**filters).annotate(sizable=sizable)
    page = Paginator(models, selectors.PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "catalog/model_list.html", {"form": form, "page": page})


@login_required
def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        model = selectors.model_detail(slug=slug)
    except LLMModel.DoesNotExist:
        raise Http404 from None
    context = {"model": model, "sizing": model_sizing_links(model)}
    return render(request, "catalog/model_detail.html", context)


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
    context = {
        "accelerator": accelerator,
        "engines": engines,
        "sizing": card_sizing_links(accelerator, engines=bool(engines)),
    }
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
