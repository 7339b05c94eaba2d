"""The saved plan's snapshot format (planner.snapshots): a round trip keeps every field; a
snapshot stored before snapshots had a version reads as version 1 and its plan is shown,
listed, answered by the API and shared as before; a version newer than the code, or a
malformed snapshot, is refused. The version 1 snapshot is a real one: what the saved-plan
service froze for tests/planner/test_saved_plans.py's worked example before the version
existed (tests/planner/data/plan_snapshot_v1.json)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import translation

from sizing_site.planner.models import SavedPlan
from sizing_site.planner.snapshots import VERSION, PlanSnapshot
from sizing_site.sharing.snapshots import SnapshotError
from tests.cast import CastTestCase

V1 = Path(__file__).parent / "data" / "plan_snapshot_v1.json"


def stored_v1() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(V1.read_text())
    return data


def test_a_round_trip_keeps_every_field() -> None:
    snapshot = PlanSnapshot.from_json(stored_v1())
    stored = json.loads(json.dumps(snapshot.to_json()))
    assert stored["version"] == VERSION == 3
    assert PlanSnapshot.from_json(stored) == snapshot


def test_a_version_1_snapshot_reads_with_its_figures() -> None:
    old = stored_v1()
    assert "version" not in old
    snapshot = PlanSnapshot.from_json(old)
    assert snapshot.version == VERSION
    assert snapshot.answer == old["answer"]
    assert snapshot.model_name == "Qwen3 32B"
    assert snapshot.computed_at.isoformat() == old["computed_at"]
    assert snapshot.prices_checked_at is not None
    assert snapshot.prices_checked_at.isoformat() == old["prices_checked_at"]
    # Version 3 adds the cost's basis, which plans saved before it did not record.
    assert snapshot.cost is None
    assert snapshot.to_json() == {**old, "version": VERSION, "cost": None}
    top = snapshot.top_plan()
    assert top is not None and top["cards"] == old["answer"]["cheapest"]["cards"]


def test_a_version_1_snapshot_without_a_model_name_or_price_check_reads() -> None:
    old = stored_v1()
    del old["model_name"], old["prices_checked_at"]
    snapshot = PlanSnapshot.from_json(old)
    assert snapshot.model_name == old["answer"]["model"]
    assert snapshot.prices_checked_at is None


def test_unknown_versions_and_malformed_snapshots_are_refused() -> None:
    current = PlanSnapshot.from_json(stored_v1()).to_json()
    no_answer = copy.deepcopy(current)
    del no_answer["answer"]
    for bad in (
        {**current, "version": VERSION + 1},
        {**current, "version": -1},
        {**current, "version": 2.0},
        {**current, "computed_at": "yesterday"},
        no_answer,
        "snapshot",
    ):
        with pytest.raises(SnapshotError):
            PlanSnapshot.from_json(bad)


class StoredPlanSnapshotTests(CastTestCase):
    def test_a_stored_version_1_plan_is_shown_listed_answered_and_shared(self) -> None:
        old = stored_v1()
        plan = SavedPlan.all_tenants.create(
            organization=self.org_a,
            name="Support bot",
            inputs={"model": "qwen3-32b", "users": "200", "n_plus_one": "true"},
            snapshot=old,
            created_by=self.alice,
        )
        self.client.force_login(self.bob)
        report = self.client.get(reverse("planner:saved-report", args=["org-a", plan.code]))
        assert report.status_code == 200
        assert "Qwen3 32B" in report.content.decode()
        listed = self.client.get(reverse("planner:saved", args=["org-a"]))
        assert "Qwen3 32B" in listed.content.decode()
        answer = self.client.get(f"/api/v1/o/org-a/plans/saved/{plan.code}/").json()
        assert answer["snapshot"] == {**old, "version": VERSION, "cost": None}
        assert answer["cost"] is None
        assert "basis not recorded" in report.content.decode()
        assert answer["cheapest"]["cards"] == old["answer"]["cheapest"]["cards"]
        self.client.force_login(self.alice)
        made = self.client.post(
            f"/api/v1/o/org-a/plans/saved/{plan.code}/share-links/",
            "{}",
            content_type="application/json",
        )
        assert made.status_code == 201, made.content
        self.client.logout()
        token = made.json()["token"]
        for lang in ("en", "de", "it", "zh-hans"):
            with translation.override(lang):
                shared = self.client.get(reverse("planner:shared", args=[token]))
            html = shared.content.decode()
            assert shared.status_code == 200, lang
            assert f'<html lang="{lang}">' in html and "Support bot" in html, lang
