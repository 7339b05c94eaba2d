"""Sources as labelled links for the catalog pages.

A catalog row's `sources` maps a field name to free text written by the curators: one or
more URLs, each often followed by a note in parentheses ("https://huggingface.co/Qwen/
Qwen3-32B (model card 'Context Length')"), or a note with no URL at all ("existing memory_gb
source; ..."). Readers get the links only, each with a human label (the site or document:
"Hugging Face: Qwen/Qwen3-32B", "arXiv 2505.09388", "TechPowerUp GPU database") and the
facts named by their field's label; the curators' notes are for staff (the templates show
the raw text in a staff-only section).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from django import template
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from catalog import hardware
from catalog.models import Accelerator

register = template.Library()

URL = re.compile(r"https?://[^\s()<>\"'\]\[,;]+")
# "github owner/repo path": a repository named without its address.
GITHUB_NAMED = re.compile(r"\bgithub ([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)")

# Sites by host (without "www."): the name a reader knows them by.
SITES = {
    "huggingface.co": "Hugging Face",
    "arxiv.org": "arXiv",
    "github.com": "GitHub",
    "raw.githubusercontent.com": "GitHub",
    "techpowerup.com": "TechPowerUp GPU database",
    "en.wikipedia.org": "Wikipedia",
    "nvidia.com": "NVIDIA",
    "research.nvidia.com": "NVIDIA Research",
    "amd.com": "AMD",
    "rocm.docs.amd.com": "AMD ROCm documentation",
    "docs.cloud.google.com": "Google Cloud documentation",
    "cloud.google.com": "Google Cloud",
    "mistral.ai": "Mistral AI",
    "docs.mistral.ai": "Mistral AI documentation",
    "qwenlm.github.io": "Qwen blog",
    "openai.com": "OpenAI",
    "api-docs.deepseek.com": "DeepSeek API documentation",
    "llama.meta.com": "Meta Llama",
    "ollama.com": "Ollama",
    "intel.com": "Intel",
    "docs.sglang.io": "SGLang documentation",
    "docs.vllm.ai": "vLLM documentation",
    "nvidia.github.io": "NVIDIA documentation",
    "pypi.org": "PyPI",
    "docs.vultr.com": "Vultr documentation",
    "tomshardware.com": "Tom's Hardware",
    "hothardware.com": "HotHardware",
    "heise.de": "heise online",
    "apple.com": "Apple",
}
# Hugging Face paths that are site pages, not a repository.
HF_PAGES = {"hardware", "docs", "blog", "papers", "spaces", "datasets", "learn", "models"}

# Source keys that are not a field of the row.
EXTRA_FACTS = {
    "config_file": _("config.json"),
    "memory_nvidia_smi_mib": _("memory reported by nvidia-smi (MiB)"),
}


@dataclass(frozen=True)
class SourceLink:
    url: str
    label: str


@dataclass
class SourceGroup:
    """One link and the facts it is the source of."""

    link: SourceLink
    facts: list[str] = field(default_factory=list)


def _host(url: str) -> str:
    host = urlsplit(url).hostname or ""
    return host.removeprefix("www.")


def link_label(url: str) -> str:
    """The site or document name for `url`."""
    host = _host(url)
    parts = [unquote(p) for p in urlsplit(url).path.split("/") if p]
    site = SITES.get(host, host)
    if host == "huggingface.co" and len(parts) >= 2 and parts[0] not in HF_PAGES:
        return f"{site}: {parts[0]}/{parts[1]}"
    if host == "arxiv.org" and len(parts) >= 2 and parts[0] in ("abs", "pdf", "html"):
        return f"{site} {parts[1].removesuffix('.pdf')}"
    if host in ("github.com", "raw.githubusercontent.com") and len(parts) >= 2:
        repo = f"{site}: {parts[0]}/{parts[1]}"
        # A file in the repository: its name tells two documents of one repository apart.
        in_tree = len(parts) > 4 and parts[2] in ("blob", "tree")
        if in_tree or (host.startswith("raw.") and len(parts) > 3):
            return f"{repo}, {parts[-1]}"
        return repo
    if host == "en.wikipedia.org" and len(parts) >= 2 and parts[0] == "wiki":
        return f"{site}: {parts[1].replace('_', ' ')}"
    return site


def links_in(text: object) -> list[SourceLink]:
    """The links a source text names, each once, in order; none for a note without one."""
    if not isinstance(text, str):
        return []
    urls = [m.group(0).rstrip(".:'") for m in URL.finditer(text)]
    urls += [f"https://github.com/{m.group(1).rstrip('.')}" for m in GITHUB_NAMED.finditer(text)]
    seen: set[str] = set()
    links = []
    for url in urls:
        if url not in seen:
            seen.add(url)
            links.append(SourceLink(url, link_label(url)))
    return links


def fact_label(row: models.Model | None, key: str) -> str:
    """A source key by its field's label ("release_date" -> "Release date")."""
    if key in EXTRA_FACTS:
        return capfirst(str(EXTRA_FACTS[key]))
    if row is not None:
        try:
            found = row._meta.get_field(key)
        except FieldDoesNotExist:
            found = None
        if isinstance(found, models.Field):
            return capfirst(str(found.verbose_name))
    return capfirst(key.replace("_", " "))


@register.filter
def source_links(sources: dict[str, Any] | None, key: str) -> list[SourceLink]:
    """The links given as the source of one field."""
    return links_in((sources or {}).get(key))


@register.filter
def text_links(text: object) -> list[SourceLink]:
    """The links in a free text (an engine support row's source)."""
    return links_in(text)


@register.simple_tag
def sources_by_link(row: models.Model) -> list[SourceGroup]:
    """The row's sources as one entry per link, with the facts it supports, in the order
    the links first appear."""
    groups: dict[str, SourceGroup] = {}
    sources = getattr(row, "sources", None) or {}
    for key, text in sources.items():
        for link in links_in(text):
            group = groups.setdefault(link.url, SourceGroup(link))
            label = fact_label(row, key)
            if label not in group.facts:
                group.facts.append(label)
    return list(groups.values())


@register.simple_tag
def source_notes(row: models.Model) -> list[tuple[str, str]]:
    """(fact label, the curators' text) for every source: the staff-only view."""
    sources = getattr(row, "sources", None) or {}
    return [(fact_label(row, key), str(text)) for key, text in sources.items()]


@register.filter
def base_configuration_price(accelerator: Accelerator) -> bool:
    """catalog.hardware.base_configuration_price, for the templates."""
    return hardware.base_configuration_price(accelerator)
