"""The configurator's launch commands: the catalog's repositories and the sized setup in,
estimator.launch's commands out, in the reader's language.

Which engine loads what, and how each spells its flags, is the estimator's business
(estimator.engines, estimator.launch); this module only finds the repositories the catalog
knows for the sized format and translates the refusals and notes.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext

from catalog import sizing
from catalog.models import LLMModel
from estimator import launch


@dataclass(frozen=True)
class ShownCommand:
    """An estimator LaunchCommand in the reader's language: the command line (None when
    the engine refuses the setup, with the reason in `refused`) and its notes."""

    engine: str
    text: str | None
    refused: str | None
    notes: tuple[str, ...] = ()


def translated(message: launch.Message | None) -> str | None:
    return None if message is None else message.render(gettext)


def shown(command: launch.LaunchCommand) -> ShownCommand:
    notes = tuple(note.render(gettext) for note in command.notes)
    return ShownCommand(command.engine, command.text, translated(command.refused), notes)


def refusal(*, engine: str, weights_format: str, quant: str, backend: str, kv: str) -> str | None:
    """estimator.launch.refusal in the reader's language."""
    return translated(
        launch.refusal(
            engine=engine, weights_format=weights_format, quant=quant, backend=backend, kv=kv
        )
    )


def launch_config(model: LLMModel, sized: sizing.Sizing) -> launch.LaunchConfig:
    """The launch inputs of a sized setup: the catalog's repository for the sized quant is
    the GGUF repo of a GGUF quant, else the checkpoint of that HF format."""
    quant = sized.setup.quant
    repo = next((w.repo for w in model.weights.all() if w.quant == quant and w.repo), "")
    gguf = sizing.is_gguf(quant)
    return launch.launch_config(
        sized.request,
        sized.result,
        hf_repo=model.hf_repo or model.slug,
        gguf_repo=repo if gguf else "",
        weights_repo="" if gguf else repo,
        n_layers=sized.model_layers,
        offloaded_layers=sized.offloaded_layers,
    )


def launch_commands(model: LLMModel, sized: sizing.Sizing) -> dict[str, ShownCommand]:
    """Every engine's command for the sized setup (estimator.engines order), translated."""
    commands = launch.launch_commands(launch_config(model, sized))
    return {engine: shown(command) for engine, command in commands.items()}
