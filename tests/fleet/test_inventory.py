"""The inventory's pages and API: who may read, add, edit and delete a machine, what a
bad form answers, what the history records, and that another organization's members see
none of it (404 on every route and method)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from catalog.models import Accelerator
from sizing_site.fleet.models import InventoryMachine
from tests.configurator.test_views import a100
from tests.fleet.base import FleetCase

CODE = "machine"


def form(**changes: Any) -> dict[str, Any]:
    data = {
        "name": "GPU node 7",
        "accelerator": "nvidia-a100-80gb-pcie",
        "card_count": "4",
        "host_ram_gb": "512",
        "interconnect": "nvlink",
        "purchase_usd": "60000",
        "purchase_date": "2025-03-01",
        "power_w": "",
        "electricity_usd_per_kwh": "0.21",
        "internal_usd_per_hour": "",
        "notes": "room 2",
    }
    data.update(changes)
    return data


class PagesByRole(FleetCase):
    def test_a_viewer_reads_the_fleet_and_history_but_writes_nothing(self) -> None:
        self.client.force_login(self.bob)
        code = self.machine.code
        assert self.client.get(self.url("fleet")).status_code == 200
        assert self.client.get(self.url("history", code)).status_code == 200
        for name, args in (("new", ()), ("edit", (code,)), ("delete", (code,))):
            assert self.client.get(self.url(name, *args)).status_code == 403
            assert self.client.post(self.url(name, *args), form()).status_code == 403
        assert InventoryMachine.all_tenants.count() == 2

    def test_an_editor_adds_and_edits_but_does_not_delete(self) -> None:
        self.client.force_login(self.dave)
        response = self.client.post(self.url("new"), form())
        assert response.status_code == 302
        added = InventoryMachine.objects.for_organization(self.org_a).get(name="GPU node 7")
        assert (added.card_count, added.interconnect, added.created_by) == (4, "nvlink", self.dave)
        assert added.host_ram_gb == 512 and str(added.purchase_usd) == "60000.00"
        # Power left blank: the card's TDP times the cards (the A100 has none: unknown).
        assert added.power_w is None and added.effective_power_w is None
        response = self.client.post(self.url("edit", added.code), form(card_count="8"))
        assert response.status_code == 302
        added.refresh_from_db()
        assert added.card_count == 8
        assert self.client.post(self.url("delete", added.code)).status_code == 403
        assert self.client.get(self.url("delete", added.code)).status_code == 403

    def test_an_admin_confirms_then_deletes(self) -> None:
        self.client.force_login(self.alice)
        code = self.machine.code
        page = self.client.get(self.url("delete", code))
        assert page.status_code == 200 and b"Rack A: two A100" in page.content
        assert InventoryMachine.all_tenants.filter(code=code).exists()  # GET deletes nothing
        assert self.client.post(self.url("delete", code)).status_code == 302
        assert not InventoryMachine.all_tenants.filter(code=code).exists()

    def test_a_bad_form_comes_back_with_400_the_errors_and_everything_typed(self) -> None:
        self.client.force_login(self.dave)
        response = self.client.post(
            self.url("new"), form(card_count="65", accelerator="no-such-card", notes="keep me")
        )
        assert response.status_code == 400
        errors = response.context["form"].errors
        assert set(errors) == {"card_count", "accelerator"}
        assert b"GPU node 7" in response.content and b"keep me" in response.content
        assert b"512" in response.content
        assert InventoryMachine.all_tenants.count() == 2
        response = self.client.post(self.url("edit", self.machine.code), form(name=""))
        assert response.status_code == 400 and "name" in response.context["form"].errors
        self.machine.refresh_from_db()
        assert self.machine.name == "Rack A: two A100 (secret)"


class History(FleetCase):
    def test_history_records_who_changed_what_and_when(self) -> None:
        self.client.force_login(self.dave)
        code = self.machine.code
        self.client.post(self.url("edit", code), form(name="Rack A", card_count="4"))
        records = list(self.machine.history.order_by("history_date", "history_id"))
        assert [(r.history_type, r.history_user) for r in records] == [
            ("+", self.alice),
            ("~", self.dave),
        ]
        assert (records[0].card_count, records[1].card_count) == (2, 4)
        page = self.client.get(self.url("history", code))
        text = page.content.decode()
        assert "dave" in text and "alice" in text
        assert "cards: 2 → 4" in text
        assert "name: Rack A: two A100 (secret) → Rack A" in text
        # A new card reads as its name.
        Accelerator.objects.create(**{**a100(), "name": "A100 40GB", "slug": "a100-40"})
        self.client.post(self.url("edit", code), form(name="Rack A", accelerator="a100-40"))
        text = self.client.get(self.url("history", code)).content.decode()
        assert "card: NVIDIA A100 80GB PCIe → NVIDIA A100 40GB" in text
        # A deletion is recorded too, with who made it.
        self.client.force_login(self.alice)
        self.client.post(self.url("delete", code))
        last = InventoryMachine.history.filter(code=code).latest("history_date")
        assert (last.history_type, last.history_user) == ("-", self.alice)


class OtherOrganization(FleetCase):
    """Charlie (org B's admin) knows org A's machine code: every page and method is 404."""

    def test_every_page_and_method_is_404_for_another_organizations_member(self) -> None:
        self.client.force_login(self.charlie)
        code = self.machine.code
        for name, args in (
            ("fleet", ()),
            ("new", ()),
            ("edit", (code,)),
            ("delete", (code,)),
            ("history", (code,)),
        ):
            for method in ("get", "post"):
                for org in ("org-a", "org-b"):
                    if org == "org-b" and not args:
                        continue  # his own org's pages
                    url = self.url(name, *args, org=org)
                    response = getattr(self.client, method)(url, form())
                    assert response.status_code == 404, (method, url)
        assert InventoryMachine.all_tenants.filter(code=code, card_count=2).exists()

    def test_the_fleet_page_shows_only_the_organizations_own_machines(self) -> None:
        self.client.force_login(self.charlie)
        page = self.client.get(self.url("fleet", org="org-b")).content.decode()
        assert "Org B&#x27;s A100 box" in page and "Rack A" not in page


class Api(FleetCase):
    def test_viewers_read_editors_write_admins_delete(self) -> None:
        self.client.force_login(self.bob)
        listed = self.client.get(self.api("inventory")).json()
        assert [m["name"] for m in listed["machines"]] == ["Rack A: two A100 (secret)"]
        one = self.client.get(self.api("inventory-machine", self.machine.code)).json()
        assert one["card_count"] == 2 and one["accelerator"] == "nvidia-a100-80gb-pcie"
        assert one["created_by"] == "alice"
        body = {"name": "n", "accelerator": "nvidia-a100-80gb-pcie", "card_count": 1}
        assert self.client.post(self.api("inventory"), body, "application/json").status_code == 403
        patch = self.client.patch(
            self.api("inventory-machine", self.machine.code), {"name": "x"}, "application/json"
        )
        assert patch.status_code == 403

        self.client.force_login(self.dave)
        created = self.client.post(self.api("inventory"), body, "application/json")
        assert created.status_code == 201
        code = created.json()["code"]
        assert created.json()["interconnect"] == "unknown"
        changed = self.client.patch(
            self.api("inventory-machine", code),
            {"card_count": 8, "purchase_usd": 9999.5, "internal_usd_per_hour": "3.25"},
            "application/json",
        )
        assert changed.status_code == 200
        data = changed.json()
        # Fields not sent keep their values.
        assert (data["name"], data["card_count"], data["purchase_usd"]) == ("n", 8, 9999.5)
        assert data["internal_usd_per_hour"] == 3.25
        assert self.client.delete(self.api("inventory-machine", code)).status_code == 403

        self.client.force_login(self.alice)
        assert self.client.delete(self.api("inventory-machine", code)).status_code == 204
        assert not InventoryMachine.all_tenants.filter(code=code).exists()
        history = InventoryMachine.history.filter(code=code).order_by("history_date", "history_id")
        assert [(h.history_type, h.history_user) for h in history] == [
            ("+", self.dave),
            ("~", self.dave),
            ("-", self.alice),
        ]

    def test_bad_input_is_a_400_naming_the_field(self) -> None:
        self.client.force_login(self.dave)
        url = self.api("inventory")
        cases: list[tuple[dict[str, Any], str]] = [
            ({"name": "n", "accelerator": "nope", "card_count": 1}, "accelerator"),
            ({"name": "n", "accelerator": "nvidia-a100-80gb-pcie", "card_count": 0}, "card_count"),
            ({"name": "", "accelerator": "nvidia-a100-80gb-pcie", "card_count": 1}, "name"),
            (
                {"name": "n", "accelerator": "nvidia-a100-80gb-pcie", "card_count": [1]},
                "card_count",
            ),
            ({"name": "n", "accelerator": "nvidia-a100-80gb-pcie", "gpus": 2}, "gpus"),
            (
                {
                    "name": "n",
                    "accelerator": "nvidia-a100-80gb-pcie",
                    "card_count": 1,
                    "interconnect": "ethernet",
                },
                "interconnect",
            ),
        ]
        for body, field in cases:
            response = self.client.post(url, body, "application/json")
            assert response.status_code == 400, body
            assert field in response.json()["errors"], (body, response.json())
        response = self.client.post(url, [1], "application/json")
        assert response.status_code == 400
        patch = self.client.patch(
            self.api("inventory-machine", self.machine.code), {"card_count": 99}, "application/json"
        )
        assert patch.status_code == 400 and "card_count" in patch.json()["errors"]
        assert InventoryMachine.all_tenants.count() == 2

    def test_the_api_refuses_in_the_forms_words_and_hands_the_service_typed_values(self) -> None:
        self.client.force_login(self.dave)
        url = self.api("inventory")
        card = "nvidia-a100-80gb-pcie"
        bad = {
            "name": None,
            "accelerator": "nope",
            "card_count": 2,
            "interconnect": "ethernet",
            "purchase_usd": 1e11,
            "notes": "x" * 5001,
        }
        assert self.client.post(url, bad, "application/json").json()["errors"] == {
            "name": ["This field is required."],
            "accelerator": [
                "Select a valid choice. That choice is not one of the available choices."
            ],
            "interconnect": [
                "Select a valid choice. ethernet is not one of the available choices."
            ],
            "purchase_usd": ["Enter a number from 0 to 9999999999.99."],
            "notes": ["Ensure this value has at most 5000 characters (it has 5001)."],
        }
        good = {"name": "n", "accelerator": card, "card_count": 1, "purchase_usd": 0.57}
        created = self.client.post(url, {**good, "notes": None}, "application/json")
        assert created.status_code == 201
        machine = InventoryMachine.all_tenants.get(code=created.json()["code"])
        assert (machine.purchase_usd, machine.notes) == (Decimal("0.57"), "")
        fleet = self.api("fleet")
        for params, message in (
            ({"ctx": ["4096", "8192"]}, "Send this parameter once."),
            ({"ctx": ""}, "Expected a value; leave the parameter out for its default."),
            ({"ctx": "many"}, "Enter a whole number."),
        ):
            assert self.client.get(fleet, params).json() == {"errors": {"ctx": [message]}}

    def test_another_organizations_member_gets_404_on_every_route_and_method(self) -> None:
        self.client.force_login(self.charlie)
        code = self.machine.code
        body = {"name": "mine now"}
        for url in (
            self.api("inventory"),
            self.api("inventory-machine", code),
            self.api("fleet"),
        ):
            for method in ("get", "post", "patch", "delete"):
                response = getattr(self.client, method)(url, body, "application/json")
                assert response.status_code == 404, (method, url)
        # His own organization's route with org A's code: not found among org B's rows.
        own = self.api("inventory-machine", code, org="org-b")
        for method in ("get", "patch", "delete"):
            response = getattr(self.client, method)(own, body, "application/json")
            assert response.status_code == 404, method
        self.machine.refresh_from_db()
        assert self.machine.name == "Rack A: two A100 (secret)"
