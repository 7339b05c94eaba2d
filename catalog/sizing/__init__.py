"""The sizing service: catalog rows in, the estimator's typed Request and Result out.

requests   Setup, sizing_request(model, accelerator, setup, measured) -> Request
workflows  size_setup(...) -> Sizing, and the configurator's questions about a Sizing
sweeps     model_on_cards (one model on many cards, cached), smallest_cards
specs      what the estimator reads of a model's config.json
cache      the shared result cache, keyed by the catalog version (warm refills it)
"""

from catalog.sizing.requests import (
    GGUF_QUANTS,
    Setup,
    can_size_accelerator,
    fallback_quant,
    is_gguf,
    measured_bytes,
    measured_weights,
    sizing_request,
)
from catalog.sizing.specs import estimator_knows, model_context_limit
from catalog.sizing.sweeps import (
    NO_ENGINE,
    CardChoice,
    CardFit,
    card_request,
    model_on_cards,
    models_on_card,
    smallest_cards,
)
from catalog.sizing.workflows import (
    ContextPoint,
    FinetuneRow,
    KvAlternative,
    QuantRow,
    Sizing,
    finetune_memory,
    kv_alternatives,
    make_it_fit,
    memory_by_context,
    quant_matrix,
    size_setup,
)

__all__ = [
    "GGUF_QUANTS",
    "NO_ENGINE",
    "CardChoice",
    "CardFit",
    "ContextPoint",
    "FinetuneRow",
    "KvAlternative",
    "QuantRow",
    "Setup",
    "Sizing",
    "can_size_accelerator",
    "card_request",
    "estimator_knows",
    "fallback_quant",
    "finetune_memory",
    "is_gguf",
    "kv_alternatives",
    "make_it_fit",
    "measured_bytes",
    "measured_weights",
    "memory_by_context",
    "model_context_limit",
    "model_on_cards",
    "models_on_card",
    "quant_matrix",
    "size_setup",
    "sizing_request",
    "smallest_cards",
]
