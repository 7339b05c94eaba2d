"""Writes to the catalog: seed loading, importers and curation actions.

Admin actions, management commands, views and the API call these; none of them write
catalog rows any other way.
"""

from catalog.services.common import CatalogError

__all__ = ["CatalogError"]
