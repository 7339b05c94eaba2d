"""Read a GGUF file's header and record the model's weights with the exact size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.services import CatalogError
from catalog.services.gguf import weights_import_gguf


class Command(BaseCommand):
    help = "Import a GGUF file (only its header is read) as ModelWeights."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--model", default="", help="slug of the model the file holds")
        parser.add_argument(
            "--header-only",
            action="store_true",
            help="the file is only the first megabytes of a GGUF (do not check its size)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        try:
            with path.open("rb") as fh:
                result = weights_import_gguf(
                    stream=fh,
                    file_name=path.name,
                    file_size=None if options["header_only"] else path.stat().st_size,
                    model_slug=options["model"],
                )
        except OSError as exc:
            raise CommandError(str(exc)) from exc
        except CatalogError as exc:
            raise CommandError(exc.message) from exc
        w, h = result.weights, result.header
        verb = "created" if result.created else "updated"
        self.stdout.write(
            f"{verb} {w.model.slug} {w.quant}: {h.architecture}, {len(h.tensors)} tensors, "
            f"{w.file_bytes} bytes"
        )
        for type_name, info in h.tensor_summary.items():
            self.stdout.write(f"  {type_name}: {info['count']} tensors, {info['bytes']} bytes")
        for name in result.changed:
            self.stdout.write(f"  changed {name}")
