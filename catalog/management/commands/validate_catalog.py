"""validate_catalog: the catalog in the database against its rules (catalog/checks/).

Staff edit the catalog in admin, so the checks read the database, not the seed files; make
test runs them on a freshly loaded catalog (the Makefile's catalog-check target).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from catalog.checks import Violation, all_checks


class Command(BaseCommand):
    help = _(
        "Check the catalog in the database: weights repositories, context lengths, weights "
        "formats per card, prices and memory types. Exits non-zero on any violation."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check",
            action="append",
            default=[],
            metavar="NAME",
            help=_("run only this check (repeatable): %(choices)s")
            % {"choices": ", ".join(name for name, _check in all_checks())},
        )
        parser.add_argument("--json", action="store_true", help=_("print the report as JSON"))

    def handle(self, *args: Any, **options: Any) -> None:
        checks = all_checks()
        names = [name for name, _check in checks]
        unknown = sorted(set(options["check"]) - set(names))
        if unknown:
            raise CommandError(
                _("Unknown check %(names)s; choose from: %(choices)s")
                % {"names": ", ".join(unknown), "choices": ", ".join(names)}
            )
        chosen = [(n, c) for n, c in checks if not options["check"] or n in options["check"]]
        found: dict[str, list[Violation]] = {name: check() for name, check in chosen}
        violations = [v for name, _check in chosen for v in found[name]]
        if options["json"]:
            report = {
                "checks": {name: len(items) for name, items in found.items()},
                "violations": [asdict(v) for v in violations],
            }
            self.stdout.write(json.dumps(report, indent=2))
        else:
            for v in violations:
                self.stdout.write(f"{v.check}: {v.row}: {v.message}")
            self.stdout.write(summary(found))
        if violations:
            raise CommandError(
                ngettext(
                    "%(count)d catalog violation", "%(count)d catalog violations", len(violations)
                )
                % {"count": len(violations)}
            )


def summary(found: dict[str, list[Violation]]) -> str:
    """One line: each check with its count of violations."""
    parts = ", ".join(
        _("%(check)s %(count)d") % {"check": name, "count": len(items)}
        for name, items in found.items()
    )
    total = sum(len(items) for items in found.values())
    return _("Catalog checks: %(parts)s; %(total)d violations in all.") % {
        "parts": parts,
        "total": total,
    }
