"""The own-catalog pages: who may read, add, edit and delete; what a bad upload answers
(400, the field named); what the history records; and that another organisation's
members get 404 on every route and method."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from catalog.models import Accelerator, LLMModel
from sizing_site.fleet import services as fleet
from sizing_site.fleet.models import InventoryMachine
from sizing_site.owncatalog import services
from tests.owncatalog import ggufs
from tests.owncatalog.base import QWEN3_8B, QWEN3_8B_PARAMS, QWEN3_8B_TEXT, OwnCase

CARD = {
    "vendor": "Acme",
    "name": "Inference card X1",
    "memory_gb": "96",
    "memory_gib": "",
    "memory_kind": "discrete",
    "bandwidth_gbps": "3200",
    "fp16_tflops": "400",
    "fp8_tflops": "",
    "tdp_w": "450",
    "interconnect": "PCIe 5.0",
    "interconnect_gbps": "64",
    "price_usd": "",
    "notes": "in-house board",
}


def card(**changes: Any) -> dict[str, Any]:
    return {**CARD, **changes}


class Pages(OwnCase):
    model: LLMModel
    accelerator: Accelerator

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        tenant = cls._tenant(cls.alice)
        cls.model = services.own_model_import_config(
            tenant=tenant, user=cls.alice, name="Our Qwen", config=QWEN3_8B
        )
        cls.accelerator = services.own_accelerator_create(
            tenant=tenant,
            user=cls.alice,
            values={
                "vendor": "Acme",
                "name": "X0",
                "memory_gb": 48,
                "bandwidth_gbps": 900,
                "fp16_tflops": 100,
            },
        )

    @classmethod
    def _tenant(cls, user: Any) -> Any:
        from sizing_site.tenancy.access import tenant_for

        return tenant_for(user, "org-a")

    def routes(self) -> list[tuple[str, tuple[str, ...]]]:
        m, a = (self.model.slug,), (self.accelerator.slug,)
        return [
            ("models", ()),
            ("model-new", ()),
            ("model-edit", m),
            ("model-delete", m),
            ("model-history", m),
            ("accelerators", ()),
            ("accelerator-new", ()),
            ("accelerator-edit", a),
            ("accelerator-delete", a),
            ("accelerator-history", a),
        ]

    def test_another_organisations_member_gets_404_everywhere(self) -> None:
        self.client.force_login(self.charlie)
        for name, args in self.routes():
            url = self.url(name, *args)
            assert self.client.get(url).status_code == 404, url
            assert self.client.post(url, card()).status_code == 404, url
            # Even under Charlie's own organisation, org A's slugs name nothing.
            if args:
                assert self.client.get(self.url(name, *args, org="org-b")).status_code == 404
        assert LLMModel.all_orgs.count() == 1 and Accelerator.all_orgs.count() == 1

    def test_a_viewer_reads_but_writes_nothing(self) -> None:
        self.client.force_login(self.bob)
        for name in ("models", "accelerators"):
            response = self.client.get(self.url(name))
            assert response.status_code == 200
            assert "Our own" in response.content.decode()
        page = self.client.get(self.url("models")).content.decode()
        assert "Our Qwen" in page
        # Qwen3-8B's config counts 8,190,735,360 parameters: shown in billions, 8.2.
        assert self.model.params_total == 8_190_735_360
        assert '<td class="num">8.2</td>' in page and "8,190,735,360" not in page
        assert reverse("explore:model-gpus", args=[self.model.slug]) in page
        assert self.client.get(self.url("model-history", self.model.slug)).status_code == 200
        for name, args in self.routes():
            if name.endswith(("new", "edit", "delete")):
                assert self.client.get(self.url(name, *args)).status_code == 403
                assert self.client.post(self.url(name, *args), card()).status_code == 403

    def test_an_editor_adds_and_edits_but_does_not_delete(self) -> None:
        self.client.force_login(self.dave)
        response = self.client.post(
            self.url("model-new"), {"name": "Qwen fine-tune", "config_text": QWEN3_8B_TEXT}
        )
        assert response.status_code == 302
        added = LLMModel.objects.for_organization(self.org_a).get(name="Qwen fine-tune")
        assert added.params_total == QWEN3_8B_PARAMS
        response = self.client.post(
            self.url("model-edit", added.slug), {"name": "Qwen FT v2", "notes": "v2"}
        )
        assert response.status_code == 302
        added.refresh_from_db()
        assert (added.name, added.notes) == ("Qwen FT v2", "v2")
        assert self.client.post(self.url("model-delete", added.slug)).status_code == 403
        response = self.client.post(self.url("accelerator-new"), card())
        assert response.status_code == 302
        x1 = Accelerator.objects.for_organization(self.org_a).get(name="Inference card X1")
        assert (x1.memory_gb, x1.bandwidth_gbps, x1.curated) == (96, 3200, False)
        assert x1.sources == {"specs": "Entered by Org A"}
        assert self.client.post(self.url("accelerator-delete", x1.slug)).status_code == 403

    def test_an_admin_deletes(self) -> None:
        self.client.force_login(self.alice)
        assert self.client.get(self.url("model-delete", self.model.slug)).status_code == 200
        assert self.client.post(self.url("model-delete", self.model.slug)).status_code == 302
        assert not LLMModel.all_orgs.exists()
        url = self.url("accelerator-delete", self.accelerator.slug)
        assert self.client.post(url).status_code == 302
        assert not Accelerator.all_orgs.exists()

    def test_a_card_in_the_inventory_is_not_deleted_and_the_machines_are_named(self) -> None:
        tenant = self._tenant(self.alice)
        fleet.machine_create(
            tenant=tenant,
            user=self.alice,
            values={"name": "Rack 9", "accelerator": self.accelerator, "card_count": 2},
        )
        self.client.force_login(self.alice)
        url = self.url("accelerator-delete", self.accelerator.slug)
        assert "Rack 9" in self.client.get(url).content.decode()
        response = self.client.post(url)
        assert response.status_code == 400
        assert "use this accelerator: Rack 9" in response.content.decode()
        assert Accelerator.all_orgs.count() == 1
        assert InventoryMachine.all_tenants.count() == 1

    def test_the_inventory_form_offers_our_own_card(self) -> None:
        self.client.force_login(self.dave)
        response = self.client.post(
            reverse("fleet:new", args=["org-a"]),
            {
                "name": "Box",
                "accelerator": self.accelerator.slug,
                "card_count": "1",
                "interconnect": "unknown",
            },
        )
        assert response.status_code == 302
        # Org B cannot build a machine on org A's card.
        self.client.force_login(self.charlie)
        response = self.client.post(
            reverse("fleet:new", args=["org-b"]),
            {
                "name": "Box",
                "accelerator": self.accelerator.slug,
                "card_count": "1",
                "interconnect": "unknown",
            },
        )
        assert response.status_code == 400

    def test_bad_input_is_a_400_naming_the_field(self) -> None:
        self.client.force_login(self.dave)
        cases = [
            ({"name": "X", "config_text": "{not json"}, "config_text", "Not valid JSON"),
            (
                {"name": "X", "config_text": '{"model_type": "llama"}'},
                "config_text",
                "must state the model",
            ),
            ({"name": "X", "config_text": "[1, 2]"}, "config_text", "must be a JSON object"),
            (
                {"name": "X", "gguf_file": SimpleUploadedFile("x.gguf", b"not a gguf file")},
                "gguf_file",
                "not a GGUF file",
            ),
            (
                {"name": "X", "config_file": SimpleUploadedFile("c.json", b" " * 1_000_001)},
                "config_file",
                "at most 1 MB",
            ),
            ({"name": "", "config_text": QWEN3_8B_TEXT}, "name", "required"),
        ]
        for data, field, message in cases:
            response = self.client.post(self.url("model-new"), data)
            assert response.status_code == 400, data
            errors = response.context["form"].errors
            assert field in errors and message in " ".join(errors[field]), (field, errors)
        response = self.client.post(self.url("model-new"), {"name": "X"})
        assert response.status_code == 400
        assert "Paste a config.json" in str(response.context["form"].non_field_errors())
        for data, field in (
            (card(bandwidth_gbps="-5"), "bandwidth_gbps"),
            (card(bandwidth_gbps="25000"), "bandwidth_gbps"),
            (card(memory_gb=""), "memory_gb"),
        ):
            response = self.client.post(self.url("accelerator-new"), data)
            assert response.status_code == 400
            assert field in response.context["form"].errors
        assert LLMModel.all_orgs.count() == 1 and Accelerator.all_orgs.count() == 1

    def test_a_gguf_upload_on_the_page(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            data = ggufs.write_llama_gguf(Path(tmp) / "t.gguf").read_bytes()
        self.client.force_login(self.dave)
        # Only the header part, as the page's script sends it: the tensor data is left out.
        upload = SimpleUploadedFile("tiny.gguf", data[: len(data) - 17_408 - 131_072 - 8])
        response = self.client.post(
            self.url("model-new"),
            {"name": "Tiny", "gguf_file": upload, "header_only": "on", "file_size": len(data)},
        )
        assert response.status_code == 302
        tiny = LLMModel.objects.for_organization(self.org_a).get(name="Tiny")
        assert tiny.params_total == ggufs.PARAMS
        assert tiny.weights.get().file_bytes == len(data)

    def test_the_history_says_who_and_when(self) -> None:
        self.client.force_login(self.dave)
        url = self.url("accelerator-edit", self.accelerator.slug)
        edited = card(vendor="Acme", name="X0", memory_gb="64")
        assert self.client.post(url, edited).status_code == 302
        self.client.force_login(self.bob)
        response = self.client.get(self.url("accelerator-history", self.accelerator.slug))
        entries = response.context["entries"]
        assert [(e.who, e.kind) for e in entries] == [("dave", "~"), ("alice", "+")]
        changed = {c.field: (c.old, c.new) for c in entries[0].changes}
        assert changed["memory (GB)"] == (48, 64)
        page = response.content.decode()
        assert "dave" in page and "alice" in page
