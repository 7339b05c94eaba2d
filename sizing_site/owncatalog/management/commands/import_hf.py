"""Import a model from the Hugging Face Hub by its repository id: a public catalog model,
or with --org one organisation's own (only its members see it).

It lives in the web layer because --org names a tenancy organisation; the import itself
is catalog.services.hub (public) and sizing_site.owncatalog.services (an organisation's).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.services import CatalogError
from catalog.services.common import validation_text
from catalog.services.hub import HubImport, model_import_hub
from sizing_site.owncatalog.services import org_model_import_hub
from sizing_site.tenancy.models import Organization


class Command(BaseCommand):
    help = (
        "Import a Hugging Face model repository (its config.json and the sizes of its GGUF "
        "and safetensors files) as a catalog model, or an organisation's own with --org."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("repo_id", help="owner/name on the Hub, e.g. Qwen/Qwen3-8B")
        parser.add_argument("--revision", default="main", help="branch, tag or commit")
        parser.add_argument("--org", default="", help="slug of the organisation that owns it")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["org"]:
                organization = Organization.objects.filter(slug=options["org"]).first()
                if organization is None:
                    raise CommandError(f"No organization with slug {options['org']!r}.")
                result = org_model_import_hub(
                    organization=organization,
                    user=None,
                    repo_id=options["repo_id"],
                    revision=options["revision"],
                )
            else:
                result = model_import_hub(repo_id=options["repo_id"], revision=options["revision"])
        except CatalogError as exc:
            raise CommandError(exc.message) from exc
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        self.report(result)

    def report(self, result: HubImport) -> None:
        model, repo = result.model, result.repo
        owner = f" for {model.organization}" if model.organization_id else ""
        verb = "created" if result.created else "updated"
        self.stdout.write(
            f"{verb} model {model.slug}{owner} from {repo.repo_id}@{repo.sha} "
            f"({model.params_total} parameters)"
        )
        for w in model.weights.order_by("format", "quant"):
            state = (
                "created"
                if f"{w.format}:{w.quant}" in result.weights_created
                else "updated"
                if f"{w.format}:{w.quant}" in result.weights_updated
                else "kept"
            )
            self.stdout.write(f"  {w.format} {w.quant}: {w.file_bytes} bytes ({state})")
        for note in result.notes:
            self.stdout.write(f"  skipped {note}")
