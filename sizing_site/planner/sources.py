"""Where the capacity planner's cards come from (docs/capacity.md; the pure planner is
estimator.capacity), from catalog rows and the prices an organization sees:

- the organization's inventory (sizing_site.fleet.selectors.machine_list, through its
  Tenant): each machine's cards, at most `card_count`, the purchase sunk, so owning costs
  only its power (effective_power_w a card, at the machine's own electricity price,
  capacity.Candidate.electricity_usd_per_kwh, the horizon's when it has none); a machine
  with an internal hourly rate is rented at that rate over its cards instead;
- cards to buy: curated catalog accelerators with a purchase price (not a base
  configuration's, catalog.hardware.base_configuration_price) and their TDP;
- cloud offers the organization may see: public ones plus its negotiated feeds
  (pricing.selectors.offer_list), USD on demand, a card's share of the instance's price.

Each is tried at tensor-parallel degrees 1, 2, 4 and 8 (a cloud offer up to its GPU
count), in the order `source_degrees` gives (sizing_site.planner.selectors.candidate_set).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import zip_longest

from django.utils.translation import gettext as _

from catalog import hardware
from catalog.models import Accelerator, Segment
from catalog.scoping import Owner
from catalog.sizing import can_size_accelerator
from estimator import capacity
from pricing.selectors import offer_list
from sizing_site.fleet.selectors import machine_list
from sizing_site.tenancy.access import Tenant

TENSOR_PARALLEL = (1, 2, 4, 8)
BUY_MAX_CARDS = 8  # cards to buy: one host of up to 8
# A bought card's hourly figure for ordering the sources only (3 years of 730 h).
_ORDER_HOURS = 36 * 730
BUY = "buy"
CLOUD = "cloud"
INVENTORY = "inventory"


@dataclass(frozen=True)
class CardSource:
    """Where the cards of a candidate come from: bought (a catalog price), rented (one
    cloud offer; `negotiated` when it is the organization's own feed price) or one of the
    organization's machines (INVENTORY: `cards_available` cards, `machine` its code,
    `internal_rate` when priced at its internal hourly rate)."""

    kind: str  # BUY, CLOUD or INVENTORY
    accelerator: Accelerator
    max_cards: int
    label: str
    rent_usd_per_card_hour: float | None = None
    purchase_usd_per_card: float | None = None
    power_w_per_card: float | None = None
    electricity_usd_per_kwh: float | None = None
    provider: str = ""
    sku: str = ""
    region: str = ""
    negotiated: bool = False
    cards_available: int | None = None
    machine: str = ""
    internal_rate: bool = False
    host_included: bool = False  # an SXM / OAM module's share of its server
    cards_per_host: int | None = None  # the modules of that server (catalog server_modules)
    offer_gpus: int | None = None  # CLOUD: the GPUs of the offer's instance

    @property
    def hourly_order(self) -> float:
        """Per card and hour, for ordering only: the rent, or the price over 3 years."""
        if self.rent_usd_per_card_hour is not None:
            return self.rent_usd_per_card_hour
        return (self.purchase_usd_per_card or 0.0) / _ORDER_HOURS


def _plannable(card: Accelerator) -> bool:
    """The estimator sizes it and has a prefill rate for TTFT (capacity.replica_curve)."""
    return can_size_accelerator(card) and bool(card.fp16_tflops)


def production_card(card: Accelerator, *, allow_consumer: bool = False) -> bool:
    """Whether a card may be planned for production: consumer cards (GeForce, Radeon RX)
    only when the user allows them (NVIDIA's GeForce driver licence excludes datacenter
    deployment; they have no ECC and no server chassis)."""
    return allow_consumer or card.segment != Segment.CONSUMER


def _cards_per_host(card: Accelerator, unit: hardware.OwnedUnit) -> int | None:
    """The devices one bought machine holds beyond the per-replica host: a server's modules,
    1 for a whole computer (unified memory), None for cards (one host per replica)."""
    if unit.basis == "server":
        return card.server_modules or None
    return 1 if unit.basis == "system" else None


def buy_sources(*, allow_consumer: bool = False) -> list[CardSource]:
    """Curated cards with a purchase price of the configuration they describe; consumer
    cards only when allowed (production_card)."""
    cards = Accelerator.objects.filter(curated=True, price_usd__gt=0).order_by("price_usd", "slug")
    sources = []
    for card in cards:
        unit = hardware.owned_unit(card)  # SXM / OAM: a share of its server, host included
        if (
            unit.price_usd is None
            or not _plannable(card)
            or hardware.base_configuration_price(card)
            or not production_card(card, allow_consumer=allow_consumer)
        ):
            continue
        sources.append(
            CardSource(
                kind=BUY,
                accelerator=card,
                max_cards=BUY_MAX_CARDS,
                label=card.name,
                purchase_usd_per_card=float(unit.price_usd),
                power_w_per_card=float(unit.power_w) if unit.power_w else None,
                host_included=not unit.host,
                cards_per_host=_cards_per_host(card, unit),
            )
        )
    return sources


def inventory_sources(*, tenant: Tenant, horizon: capacity.Horizon) -> list[CardSource]:
    """The organization's machines with a card the planner can size. Owned: the purchase
    is sunk (capacity.Candidate without a purchase price), its power a card is the
    machine's effective_power_w over its cards, priced at the machine's own electricity
    price (None: the horizon's). With an internal hourly rate: that rate over its cards,
    rented, and no power. `horizon` is kept for the callers; the price no longer scales
    the power."""
    sources = []
    for machine in machine_list(tenant=tenant):
        card = machine.accelerator
        if not _plannable(card):
            continue
        rent = power = electricity = None
        internal = machine.internal_usd_per_hour is not None
        if internal:
            rent = float(machine.internal_usd_per_hour or 0) / machine.card_count
        elif machine.effective_power_w:
            power = machine.effective_power_w / machine.card_count
            if machine.electricity_usd_per_kwh is not None:
                electricity = float(machine.electricity_usd_per_kwh)
        sources.append(
            CardSource(
                kind=INVENTORY,
                accelerator=card,
                max_cards=machine.card_count,
                label=machine.name,
                rent_usd_per_card_hour=rent,
                power_w_per_card=power,
                electricity_usd_per_kwh=electricity,
                cards_available=machine.card_count,
                machine=str(machine.code),
                internal_rate=internal,
            )
        )
    return sources


def cloud_sources(*, organization: Owner, allow_consumer: bool = False) -> list[CardSource]:
    """The organization's visible offers with a USD on-demand price and a catalog card, as
    the prices page lists them (public plus its negotiated feeds); consumer cards only
    when allowed (production_card)."""
    offers = offer_list(organizations=[organization]).filter(
        accelerator__isnull=False, on_demand_per_hour__gt=0, currency="USD"
    )
    sources = []
    for offer in offers:
        card = offer.accelerator
        if card is None or not _plannable(card):
            continue
        if not production_card(card, allow_consumer=allow_consumer):
            continue
        sources.append(
            CardSource(
                kind=CLOUD,
                accelerator=card,
                max_cards=offer.gpu_count,
                label=" ".join(
                    part for part in (offer.provider.name, offer.sku, offer.region) if part
                ),
                rent_usd_per_card_hour=float(offer.on_demand_per_hour or 0) / offer.gpu_count,
                provider=offer.provider.name,
                sku=offer.sku,
                region=offer.region,
                negotiated=offer.organization_id is not None,
                offer_gpus=offer.gpu_count,
            )
        )
    return sources


def source_degrees(
    cloud: Sequence[CardSource], buy: Sequence[CardSource], ours: Sequence[CardSource] = ()
) -> list[tuple[CardSource, int]]:
    """(source, TP) in the order the bound keeps them: the organization's machines first
    (each at every TP its cards allow), its negotiated offers next, then cloud offers and
    cards to buy in turn, each by its price per card. Of the cloud offers of one card, each
    TP takes the cheapest per card whose instance has that many GPUs (public and
    negotiated apart)."""
    cheapest: dict[tuple[int, bool, int], CardSource] = {}
    for source in sorted(cloud, key=lambda s: (s.hourly_order, s.label)):
        for tp in TENSOR_PARALLEL:
            if tp <= source.max_cards:
                cheapest.setdefault((source.accelerator.pk, source.negotiated, tp), source)
    rented = sorted(
        ((source, tp) for (_, _, tp), source in cheapest.items()),
        key=lambda pair: (not pair[0].negotiated, pair[0].hourly_order, pair[1], pair[0].label),
    )
    negotiated = [pair for pair in rented if pair[0].negotiated]
    public = [pair for pair in rented if not pair[0].negotiated]
    bought = [
        (source, tp)
        for source in sorted(buy, key=lambda s: (s.hourly_order, s.label))
        for tp in TENSOR_PARALLEL
        if tp <= source.max_cards
    ]
    turns = [pair for both in zip_longest(public, bought) for pair in both if pair is not None]
    owned = [(source, tp) for source in ours for tp in TENSOR_PARALLEL if tp <= source.max_cards]
    return owned + negotiated + turns


def source_label(source: CardSource) -> str:
    """A candidate's label: says whether the cards are bought, rented (and negotiated) or
    the organization's own (and priced at its internal rate)."""
    if source.kind == INVENTORY:
        if source.internal_rate:
            return _("%(name)s (ours, internal rate)") % {"name": source.label}
        return _("%(name)s (ours)") % {"name": source.label}
    if source.kind == BUY:
        return _("%(card)s (buy)") % {"card": source.accelerator.name}
    names = {"card": source.accelerator.name, "offer": source.label}
    if source.negotiated:
        return _("%(card)s: %(offer)s (negotiated)") % names
    return _("%(card)s: %(offer)s") % names
