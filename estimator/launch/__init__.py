"""Launch commands for a sized setup: every engine's command line, or why it cannot run.

    launch_config(Request, Result, hf_repo=..., gguf_repo=..., weights_repo=...,
                  n_layers=..., offloaded_layers=...) -> LaunchConfig
    launch_commands(LaunchConfig) -> {engine: LaunchCommand}   (estimator.engines order)
    refusal(engine=, weights_format=, quant=, backend=, kv=) -> Message | None

Texts for a reader (refusals, notes) are Messages, rendered in the reader's language by
the page (estimator.launch.messages).
"""

from __future__ import annotations

from estimator.launch.commands import launch_command, launch_commands
from estimator.launch.config import (
    MLX_QUANTS,
    LaunchCommand,
    LaunchConfig,
    launch_config,
    native_dtype,
)
from estimator.launch.messages import Message
from estimator.launch.refusals import refusal

__all__ = [
    "MLX_QUANTS",
    "LaunchCommand",
    "LaunchConfig",
    "Message",
    "launch_command",
    "launch_commands",
    "launch_config",
    "native_dtype",
    "refusal",
]
