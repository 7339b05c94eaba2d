"""The saved configuration's snapshot format (reports.snapshots): a round trip keeps every
field; a snapshot stored before snapshots had a version reads as version 1 and is shown,
exported and compared as before; a version newer than the code, or a malformed snapshot,
is refused. The version 1 snapshot is a real one: what the report service froze for
tests/reports/base.py's configuration before the version existed
(tests/reports/data/configuration_snapshot_v1.json)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from sizing_site.reports.models import SavedConfiguration
from sizing_site.reports.snapshots import VERSION, ConfigurationSnapshot, OwnRows
from sizing_site.sharing.snapshots import SnapshotError
from tests.reports.base import ReportsTestCase

V1 = Path(__file__).parent / "data" / "configuration_snapshot_v1.json"


def stored_v1() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(V1.read_text())
    return data


def test_a_round_trip_keeps_every_field() -> None:
    snapshot = ConfigurationSnapshot.from_json(stored_v1())
    stored = json.loads(json.dumps(snapshot.to_json()))  # as the JSON field keeps it
    assert stored["version"] == VERSION == 3
    assert ConfigurationSnapshot.from_json(stored) == snapshot


def test_a_version_1_snapshot_reads_with_its_figures() -> None:
    old = stored_v1()
    assert "version" not in old
    snapshot = ConfigurationSnapshot.from_json(old)
    assert snapshot.version == VERSION
    assert snapshot.result == old["result"]
    assert snapshot.usable_bytes == old["bar"]["usable_bytes"]
    assert snapshot.model.name == "GLM-4.5-Air"
    assert snapshot.accelerator.bandwidth_gbps == 1935.0
    assert snapshot.setup["gpus"] == 2
    assert snapshot.computed_at.isoformat() == old["computed_at"]
    # The last shape of version 1 is version 2 without its version key; version 3 adds the
    # cost, which rows saved before it did not record.
    assert snapshot.cost is None
    assert snapshot.to_json() == {**old, "version": VERSION, "cost": None}


def test_the_oldest_version_1_shape_reads_too() -> None:
    """Before the org's own rows, the card's memory as built and the bar drawn in the
    templates: no "own", three card figures fewer, the bar's parts and percents."""
    old = stored_v1()
    del old["own"]
    for name in ("memory_gib", "memory_reported_gib", "chips_per_board"):
        del old["accelerator"][name]
    usable = old["bar"]["usable_bytes"]
    old["bar"] = {"parts": [{"key": "kv", "bytes": 1, "percent": 1.0}], "usable_bytes": usable}
    old["bar"]["usable_percent"] = 99.0
    snapshot = ConfigurationSnapshot.from_json(old)
    assert snapshot.own == OwnRows(model=False, accelerator=False)
    assert snapshot.accelerator.memory_gib is None and snapshot.accelerator.chips_per_board is None
    assert snapshot.accelerator.memory_gb == 80.0
    assert snapshot.to_json()["bar"] == {"usable_bytes": usable}


def test_unknown_versions_and_malformed_snapshots_are_refused() -> None:
    current = ConfigurationSnapshot.from_json(stored_v1()).to_json()
    no_result = copy.deepcopy(current)
    del no_result["result"]
    extra_figure = copy.deepcopy(current)
    extra_figure["accelerator"]["hbm_stacks"] = 5
    bad_v1 = stored_v1()
    del bad_v1["accelerator"]
    for bad in (
        {**current, "version": VERSION + 1},  # written by newer code: never guessed at
        {**current, "version": 0},
        {**current, "version": "2"},
        {**current, "version": True},
        no_result,
        extra_figure,
        bad_v1,
        [current],
        None,
    ):
        with pytest.raises(SnapshotError):
            ConfigurationSnapshot.from_json(bad)


class StoredSnapshotTests(ReportsTestCase):
    def test_a_new_configuration_stores_the_current_version(self) -> None:
        stored = self.saved.snapshot
        assert stored["version"] == VERSION
        assert ConfigurationSnapshot.from_json(stored).to_json() == stored

    def test_a_stored_version_1_row_is_shown_exported_and_compared(self) -> None:
        old = stored_v1()
        SavedConfiguration.all_tenants.filter(pk=self.saved.pk).update(snapshot=old)
        copy_ = self.save_as(self.alice, "today's copy")
        self.client.force_login(self.bob)
        report = self.client.get(self.url("report", "org-a", self.saved.code))
        assert report.status_code == 200
        assert "2 × NVIDIA A100 80GB PCIe" in report.content.decode()
        exported = self.client.get(self.url("export-json", "org-a", self.saved.code)).json()
        assert exported["snapshot"] == {**old, "version": VERSION, "cost": None}
        assert self.client.get(self.url("list", "org-a")).status_code == 200
        compare = self.url("compare", "org-a") + f"?c={self.saved.code}&c={copy_.code}"
        assert self.client.get(compare).status_code == 200
        # A duplicate stores the snapshot at the current version, its figures unchanged.
        self.client.force_login(self.alice)
        self.client.post(self.url("duplicate", "org-a", self.saved.code))
        duplicate = SavedConfiguration.objects.for_organization(self.org_a).latest("created")
        assert duplicate.snapshot == {**old, "version": VERSION, "cost": None}
