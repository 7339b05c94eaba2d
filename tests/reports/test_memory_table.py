"""The saved report's memory table: its parts come from the frozen result through the
configurator's memory_bar tag, and a snapshot saved while the snapshot still stored the
bar's parts (with their SVG geometry) renders the same page."""

from __future__ import annotations

import re

from estimator.units import GIB
from sizing_site.reports.models import SavedConfiguration
from tests.reports.base import ReportsTestCase
from tests.reports.test_reports import strip_csrf


class MemoryTable(ReportsTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.bob)

    def report(self) -> bytes:
        content: bytes = self.client.get(self.url("report", "org-a", self.saved.code)).content
        return strip_csrf(content)

    def test_the_table_lists_the_frozen_results_parts_and_the_usable_memory(self) -> None:
        result = self.saved.snapshot["result"]
        # QUERY: two A100s, so the usable memory of both devices.
        usable = result["usable_bytes_per_device"] * 2
        assert self.saved.snapshot["bar"] == {"usable_bytes": usable}
        html = self.report().decode()
        table = html[html.index("<th>Part</th>") : html.index("</table>", html.index("<th>Part"))]
        rows = re.findall(r'<tr><th>([^<]+)</th>\s*<td class="num">([\d.]+)</td>', table)
        weights = result["weights_bytes"] + result["multimodal_bytes"] - result["offloaded_bytes"]
        assert result["offloaded_bytes"] == 0  # all on the GPUs: no offloaded row
        assert rows == [
            ("Weights on the GPUs", f"{weights / GIB:.2f}"),
            ("KV cache", f"{result['kv_cache_bytes'] / GIB:.2f}"),
            ("Engine overhead", f"{result['overhead_bytes'] / GIB:.2f}"),
            ("Total", f"{result['total_bytes'] / GIB:.2f}"),
            ("Usable on all GPUs", f"{usable / GIB:.2f}"),
        ]

    def test_a_snapshot_holding_the_old_bar_renders_the_same_report(self) -> None:
        today = self.report()
        snapshot = self.saved.snapshot
        usable = snapshot["bar"]["usable_bytes"]
        # The format saved before the chart geometry moved into the templates (version 1,
        # without a version key), with parts that disagree with the result: the page must
        # read none of them.
        del snapshot["version"]
        snapshot["bar"] = {
            "parts": [
                {"key": "weights", "bytes": 1, "percent": 1.0, "x": 0.0},
                {"key": "offloaded", "bytes": 2, "percent": 2.0, "x": 1.0},
            ],
            "usable_bytes": usable,
            "usable_percent": 99.0,
        }
        SavedConfiguration.all_tenants.filter(pk=self.saved.pk).update(snapshot=snapshot)
        assert self.report() == today
