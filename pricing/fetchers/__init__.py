"""One module per source kind; each exposes `fetch(SourceConfig) -> FetchResult`."""

from __future__ import annotations

from collections.abc import Callable

from pricing.fetchers import aws, azure, feed, lambda_, runpod, vastai
from pricing.fetchers.base import FetchResult, SourceConfig

FETCHERS: dict[str, Callable[[SourceConfig], FetchResult]] = {
    "azure": azure.fetch,
    "aws": aws.fetch,
    "vastai": vastai.fetch,
    "runpod": runpod.fetch,
    "lambda": lambda_.fetch,
    "feed": feed.fetch,
}
