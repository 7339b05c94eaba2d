from __future__ import annotations

from catalog.models import Accelerator
from pricing.models import CloudProvider, PriceSource, SourceKind
from sizing_site.tenancy.models import Organization


def accelerators() -> None:
    """The few curated catalog rows the fixtures' GPUs match."""
    rows = [
        (
            "NVIDIA",
            "H100 SXM5 80GB",
            "nvidia-h100-sxm5-80gb",
            ["H100", "H100 SXM", "H100-80GB"],
            80,
        ),
        ("NVIDIA", "L40S", "nvidia-l40s", ["L40S", "L40S 48GB"], 48),
        ("NVIDIA", "H100 NVL 94GB", "nvidia-h100-nvl-94gb", ["H100 NVL"], 94),
        ("NVIDIA", "H200 SXM 141GB", "nvidia-h200-sxm-141gb", ["H200", "H200 141GB"], 141),
    ]
    for vendor, name, slug, aliases, memory in rows:
        Accelerator.objects.get_or_create(
            slug=slug,
            defaults={
                "vendor": vendor,
                "name": name,
                "aliases": aliases,
                "memory_gb": memory,
                "curated": True,
            },
        )


def source(
    kind: str, base_url: str, *, organization: Organization | None = None, **kwargs: object
) -> PriceSource:
    provider, _ = CloudProvider.objects.get_or_create(
        slug=f"p-{kind}", defaults={"name": f"Provider {kind}"}
    )
    return PriceSource.all_orgs.create(
        provider=provider,
        kind=SourceKind(kind),
        base_url=base_url,
        organization=organization,
        **kwargs,
    )
