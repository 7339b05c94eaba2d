"""Create or update a model from a config.json file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.services import CatalogError
from catalog.services.configs import config_parse_text, model_import_config


class Command(BaseCommand):
    help = "Import a config.json (validated by the estimator's parser) as a catalog model."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--slug", default="", help="the model to update or create")
        parser.add_argument("--hf-repo", default="", help="organisation/name on Hugging Face")
        parser.add_argument("--name", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        # Files saved as org__name.json (as in catalog/data/configs) name their repo.
        repo = options["hf_repo"] or (path.stem.replace("__", "/", 1) if "__" in path.stem else "")
        try:
            config = config_parse_text(text=path.read_bytes())
            result = model_import_config(
                config=config, slug=options["slug"], hf_repo=repo, name=options["name"]
            )
        except OSError as exc:
            raise CommandError(str(exc)) from exc
        except CatalogError as exc:
            raise CommandError(exc.message) from exc
        verb = "created" if result.created else "updated"
        self.stdout.write(f"{verb} model {result.model.slug}")
        for name, (old, new) in result.changed.items():
            if name != "config":
                self.stdout.write(f"  {name}: {old} -> {new}")
        if "config" in result.changed:
            self.stdout.write("  config: replaced")
