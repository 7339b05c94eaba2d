"""The model page's generated FAQ: questions a buyer asks, answered from the page's own
rows (tables.CardTable at the page's context and filters) and the same filters at
32K and 128K tokens (tables.ContextOutlook). Every answer is a sentence with figures,
in the visitor's language, and may carry links (the configurator for the pair it names).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from catalog import hardware
from catalog.models import LLMModel
from estimator import cost
from pricing.costs import DEFAULT_AMORTIZATION_YEARS, DEFAULT_USD_PER_KWH, DEFAULT_UTILIZATION
from sizing_site.explore.costs import Offer
from sizing_site.explore.tables import (
    CARD_SORTS,
    HIGH_CONFIDENCE_MAX_RATIO,
    MEDIUM_CONFIDENCE_MAX_RATIO,
    CardRow,
    CardTable,
    ContextOutlook,
    sorted_rows,
)
from sizing_site.explore.templatetags.explore import configure_url

GIB = 2**30
# The contexts the FAQ looks ahead to.
OUTLOOK_CONTEXTS = (32768, 131072)


@dataclass(frozen=True)
class FaqItem:
    question: str
    answer: str
    links: tuple[tuple[str, str], ...] = ()  # (label, url)


def num(value: float, places: int = 0) -> str:
    """A number in the active language, grouped (1,008.5 / 1.008,5)."""
    return formats.number_format(
        round(value, places), decimal_pos=places, use_l10n=True, force_grouping=True
    )


def gib(n_bytes: float) -> str:
    return num(n_bytes / GIB, 1)


def _speed(row: CardRow) -> str:
    speed = row.fit.decode_tokens_per_s
    return num(speed.estimate, 1) if speed else "—"


Link = Callable[[CardRow], str]  # a row's configurator address


@dataclass(frozen=True)
class ModelFaq:
    """What the model page's FAQ reads: the page's table and its context, the outlooks at
    OUTLOOK_CONTEXTS, the cheapest offers (rent or buy), and how to link a row to the
    configurator (`link`) or a card count of it (`link_gpus`)."""

    model: LLMModel
    table: CardTable
    ctx: int
    outlooks: Sequence[ContextOutlook]
    offers: Mapping[int, Offer]
    link: Link
    link_gpus: Callable[[CardRow, int], str]

    def items(self) -> list[FaqItem]:
        return [
            self.which_cards(),
            self.smallest(),
            self.fastest(),
            self.cheapest(),
            *(self.at_context(o) for o in self.outlooks),
            self.apple(),
            self.rent_or_buy(),
            self.multi_gpu(),
            self.confidence(),
        ]

    def _row_link(self, row: CardRow | None) -> tuple[tuple[str, str], ...]:
        if row is None:
            return ()
        url = self.link(row)
        label = _("Open %(card)s in the configurator") % {"card": str(row.accelerator)}
        return ((label, url),) if url else ()

    def which_cards(self) -> FaqItem:
        t = self.table
        question = _("Which cards can run %(model)s at %(ctx)s tokens of context?") % {
            "model": self.model.name,
            "ctx": num(self.ctx),
        }
        if not t.fitting:
            answer = ngettext(
                "None of the %(candidates)s card shown can.",
                "None of the %(candidates)s cards shown can.",
                t.candidates,
            ) % {"candidates": num(t.candidates)}
            return FaqItem(question, answer)
        answer = ngettext(
            "%(fitting)s of the %(candidates)s card shown can, each under its default engine.",
            "%(fitting)s of the %(candidates)s cards shown can, each under its default engine.",
            t.candidates,
        ) % {"fitting": num(t.fitting), "candidates": num(t.candidates)}
        if t.median_speed is not None:
            answer += " " + ngettext(
                "The median speed of the %(n)s card with a calibrated speed is %(speed)s "
                "tokens per second for one sequence.",
                "The median speed of the %(n)s cards with a calibrated speed is %(speed)s "
                "tokens per second for one sequence.",
                t.median_of,
            ) % {"n": num(t.median_of), "speed": num(t.median_speed, 1)}
        return FaqItem(question, answer)

    def _miss_sentence(self) -> str:
        miss = self.table.nearest_miss
        if miss is None:
            return ""
        return _(
            "The nearest miss is %(card)s (%(memory)s GiB), short by %(short)s GiB at the "
            "most compressed quantization allowed."
        ) % {
            "card": str(miss.accelerator),
            "memory": num(miss.accelerator.capacity_gib or 0, 1),
            "short": gib(miss.shortfall_bytes),
        }

    def smallest(self) -> FaqItem:
        question = _("What is the smallest card that runs %(model)s?") % {"model": self.model.name}
        row = self.table.smallest
        if row is None:
            answer = _("None of the cards shown runs it at this context.")
            miss = self._miss_sentence()
            return FaqItem(
                question, f"{answer} {miss}".strip(), self._row_link(self.table.nearest_miss)
            )
        answer = _(
            "%(card)s, with %(memory)s GiB: it runs %(quant)s at about %(speed)s tokens per second."
        ) % {
            "card": str(row.accelerator),
            "memory": num(row.accelerator.capacity_gib or 0, 1),
            "quant": row.fit.quant,
            "speed": _speed(row),
        }
        return FaqItem(question, answer, self._row_link(row))

    def fastest(self) -> FaqItem:
        question = _("Which card runs %(model)s fastest?") % {"model": self.model.name}
        row = self.table.fastest
        if row is None or row.fit.decode_tokens_per_s is None:
            return FaqItem(question, _("No card with a calibrated speed runs it at this context."))
        speed = row.fit.decode_tokens_per_s
        answer = _(
            "%(card)s: about %(speed)s tokens per second (%(low)s–%(high)s) at %(quant)s, "
            "for one sequence. Speeds without a published measurement behind them are not "
            "ranked."
        ) % {
            "card": str(row.accelerator),
            "speed": num(speed.estimate, 1),
            "low": num(speed.low),
            "high": num(speed.high),
            "quant": row.fit.quant,
        }
        return FaqItem(question, answer, self._row_link(row))

    def cheapest(self) -> FaqItem:
        question = _("Which card is the cheapest way to run %(model)s?") % {
            "model": self.model.name
        }
        t = self.table
        parts: list[str] = []
        links: list[tuple[str, str]] = []
        if t.cheapest_buy is not None:
            row = t.cheapest_buy
            parts.append(
                _(
                    "The lowest purchase price among the cards that run it: %(card)s at "
                    "%(price)s USD (about %(speed)s tokens per second)."
                )
                % {
                    "card": str(row.accelerator),
                    "price": num(row.accelerator.price_usd or 0),
                    "speed": _speed(row),
                }
            )
            links.extend(self._row_link(row))
        if t.cheapest_run is not None and t.cheapest_run.cost is not None:
            row, run = t.cheapest_run, t.cheapest_run.cost
            basis = (
                _("renting it on %(provider)s") % {"provider": run.provider}
                if run.basis == "cloud"
                else _("owning it")
            )
            parts.append(
                _("The lowest cost per 1M output tokens: %(card)s at %(cost)s USD, %(basis)s.")
                % {
                    "card": str(row.accelerator),
                    "cost": num(run.usd_per_million, 2),
                    "basis": basis,
                }
            )
            if row is not t.cheapest_buy:
                links.extend(self._row_link(row))
        if t.unpriced:
            parts.append(
                ngettext(
                    "%(n)s card that runs it has no price in the catalog.",
                    "%(n)s cards that run it have no price in the catalog.",
                    t.unpriced,
                )
                % {"n": num(t.unpriced)}
            )
        if not parts[: len(parts) - (1 if t.unpriced else 0)]:
            parts.insert(0, _("No card that runs it has a price or a cloud offer in the catalog."))
        return FaqItem(question, " ".join(parts), tuple(links))

    def at_context(self, outlook: ContextOutlook) -> FaqItem:
        question = _("What changes at %(ctx)s tokens of context?") % {
            "ctx": num(outlook.context_tokens)
        }
        if outlook.limit is not None:
            answer = _("%(model)s reads at most %(limit)s tokens of context.") % {
                "model": self.model.name,
                "limit": num(outlook.limit),
            }
            return FaqItem(question, answer)
        answer = _(
            "The KV cache grows with the context, so cards drop out or fall to a more "
            "compressed quantization."
        )
        answer += " " + ngettext(
            "At %(ctx)s tokens %(fitting)s of %(candidates)s card runs it (%(now)s at "
            "%(ctx_now)s tokens).",
            "At %(ctx)s tokens %(fitting)s of %(candidates)s cards run it (%(now)s at "
            "%(ctx_now)s tokens).",
            outlook.candidates,
        ) % {
            "ctx": num(outlook.context_tokens),
            "fitting": num(outlook.fitting),
            "candidates": num(outlook.candidates),
            "now": num(self.table.fitting),
            "ctx_now": num(self.ctx),
        }
        row = outlook.smallest
        if row is not None:
            answer += " " + _("The smallest is %(card)s with %(memory)s GiB, at %(quant)s.") % {
                "card": str(row.accelerator),
                "memory": num(row.accelerator.capacity_gib or 0, 1),
                "quant": row.fit.quant,
            }
        return FaqItem(question, answer)

    def apple(self) -> FaqItem:
        question = _("Should I buy an Apple machine for %(model)s?") % {"model": self.model.name}
        rows = sorted_rows(self.table.fitting_rows(), "-speed", CARD_SORTS)
        ranked = [r for r in rows if r.fit.calibrated_speed is not None]
        apple = next((r for r in ranked if r.accelerator.vendor == "Apple"), None)
        other = next((r for r in ranked if r.accelerator.vendor != "Apple"), None)
        if apple is None:
            answer = _("No Apple machine in the catalog runs it at this context.")
            if other is not None:
                answer += " " + _(
                    "The fastest card that does is %(card)s, at about %(speed)s tokens per second."
                ) % {
                    "card": str(other.accelerator),
                    "speed": _speed(other),
                }
            return FaqItem(question, answer, self._row_link(other))
        answer = _(
            "The fastest Apple machine that runs it is %(card)s: about %(speed)s tokens per "
            "second at %(quant)s, in %(memory)s GiB of unified memory."
        ) % {
            "card": str(apple.accelerator),
            "speed": _speed(apple),
            "quant": apple.fit.quant,
            "memory": num(apple.accelerator.capacity_gib or 0, 1),
        }
        if other is not None:
            answer += " " + _(
                "The fastest other card is %(card)s at about %(speed)s tokens per second."
            ) % {"card": str(other.accelerator), "speed": _speed(other)}
        return FaqItem(question, answer, self._row_link(apple) + self._row_link(other))

    def rent_or_buy(self) -> FaqItem:
        question = _("Should I rent or buy the hardware for %(model)s?") % {
            "model": self.model.name
        }
        both = [
            r
            for r in self.table.fitting_rows()
            if hardware.owned_unit(r.accelerator).price_usd and r.accelerator.pk in self.offers
        ]
        hours = 24 * DEFAULT_UTILIZATION
        if both:
            row = max(both, key=lambda r: r.fit.calibrated_speed or 0)
            offer = self.offers[row.accelerator.pk]
            unit = hardware.owned_unit(row.accelerator)
            purchase = cost.system_purchase_usd(unit.price_usd, 1, host=unit.host) or 0.0
            watts = row.accelerator.tdp_w if unit.host else unit.power_w
            power = cost.system_power_w(watts, 1, host=unit.host)
            own = cost.Ownership(
                purchase_usd=purchase,
                power_w=power or float(cost.HOST_POWER_W),
                electricity_usd_per_kwh=DEFAULT_USD_PER_KWH,
                hours_per_day=hours,
                amortization_months=round(DEFAULT_AMORTIZATION_YEARS * 12),
            )
            verdict = cost.rent_vs_buy(own, offer.usd_per_hour)
            figures = {
                "card": str(row.accelerator),
                "provider": offer.provider,
                "rate": num(offer.usd_per_hour, 2),
                "hours": num(hours),
                "rent": num(verdict.monthly_rent_usd),
                "price": num(purchase),
                "energy": num(verdict.monthly_energy_usd),
            }
            answer = (
                _(
                    "Renting %(card)s on %(provider)s at %(rate)s USD an hour for %(hours)s hours "
                    "a day costs %(rent)s USD a month; owning one (%(price)s USD with its host) "
                    "costs %(energy)s USD a month in electricity."
                )
                % figures
            )
            if verdict.break_even_months is not None:
                answer += " " + _("Buying pays for itself after about %(months)s months.") % {
                    "months": num(verdict.break_even_months)
                }
            else:
                answer += " " + _("Renting costs less than the electricity of owning it.")
            return FaqItem(question, answer, self._row_link(row))
        rows = self.table.fitting_rows()
        cloud = [r for r in rows if r.cost and r.cost.basis == "cloud"]
        owned = [r for r in rows if r.cost and r.cost.basis == "owned"]
        parts = [_("No card that runs it has both a catalog price and a cloud offer.")]
        for group, text in (
            (cloud, _("Cheapest to rent: %(card)s at %(cost)s USD per 1M output tokens.")),
            (owned, _("Cheapest to own: %(card)s at %(cost)s USD per 1M output tokens.")),
        ):
            if group:
                row = min(group, key=lambda r: r.cost.usd_per_million if r.cost else 0)
                parts.append(
                    text
                    % {
                        "card": str(row.accelerator),
                        "cost": num(row.cost.usd_per_million if row.cost else 0, 2),
                    }
                )
        return FaqItem(question, " ".join(parts))

    def multi_gpu(self) -> FaqItem:
        question = _("Can I split %(model)s over several GPUs?") % {"model": self.model.name}
        miss = self.table.nearest_miss
        if miss is not None:
            n = miss.devices_by_memory
            answer = _(
                "By memory, about %(n)s × %(card)s hold it at the most compressed "
                "quantization allowed, its layers or tensors split across the cards. The "
                "configurator checks the exact figure and the speed."
            ) % {"n": num(n), "card": str(miss.accelerator)}
            url = self.link_gpus(miss, n)
            label = _("Open %(n)s × %(card)s in the configurator") % {
                "n": num(n),
                "card": str(miss.accelerator),
            }
            return FaqItem(question, answer, ((label, url),) if url else ())
        if self.table.fitting:
            return FaqItem(
                question,
                _(
                    "Every card shown runs it on its own. Several GPUs add room for longer "
                    "contexts and more concurrent users, and tensor parallelism adds speed."
                ),
            )
        return FaqItem(question, _("No card shown has memory and an engine to split it over."))

    def confidence(self) -> FaqItem:
        counts = self.table.confidence_counts
        answer = _(
            "Speeds by confidence: high %(high)s, medium %(medium)s, low %(low)s. High: "
            "the range's upper end is at most %(h)s× its lower end, from measurements of "
            "this engine on this backend; medium: at most %(m)s×; low: wider, or no "
            "published measurement of this engine on this backend."
        ) % {
            "high": num(counts.get("high", 0)),
            "medium": num(counts.get("medium", 0)),
            "low": num(counts.get("low", 0)),
            "h": num(HIGH_CONFIDENCE_MAX_RATIO, 1),
            "m": num(MEDIUM_CONFIDENCE_MAX_RATIO, 1),
        }
        return FaqItem(_("How sure are these speeds?"), answer)


def model_faq(
    *,
    model: LLMModel,
    table: CardTable,
    ctx: int,
    outlooks: Sequence[ContextOutlook],
    offers: Mapping[int, Offer],
) -> list[FaqItem]:
    """The model page's FAQ, its links opening the configurator on the pair a row names
    at the page's context (with the row's quant and engine, or a card count)."""
    return ModelFaq(
        model=model,
        table=table,
        ctx=ctx,
        outlooks=outlooks,
        offers=offers,
        link=lambda row: configure_url(
            model.slug, row.accelerator.slug, ctx=ctx, quant=row.fit.quant, engine=row.fit.engine
        ),
        link_gpus=lambda row, n: configure_url(
            model.slug, row.accelerator.slug, ctx=ctx, gpus=n, engine=row.fit.engine
        ),
    ).items()
