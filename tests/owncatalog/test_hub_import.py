"""Size a Hugging Face model: an editor imports a repository by its id into the
organisation's own models (only its members see it, another organisation gets 404), a
second import updates it, refusals are a form error, and `manage.py import_hf` does the
same for the public catalog or, with --org, for one organisation."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.urls import reverse

from catalog.models import Accelerator, LLMModel, ModelWeights
from catalog.services import CatalogError
from catalog.services.hub import model_import_hub
from sizing_site.owncatalog import services
from tests.catalog.test_hub import Q4_K_M, Q6_K_PARTS, Q8_0, REPO, SAFETENSORS, qwen_repo
from tests.fakehub import FakeHub
from tests.owncatalog.base import QWEN3_8B, QWEN3_8B_PARAMS, OwnCase


class HubImport(OwnCase):
    hub: FakeHub

    @pytest.fixture(autouse=True)
    def _hub(self, fake_hub: FakeHub) -> None:
        self.hub = fake_hub
        fake_hub.repos[REPO] = qwen_repo()

    def test_an_editor_imports_a_repo_and_lands_on_its_sizing(self) -> None:
        self.client.force_login(self.dave)
        assert self.client.get(self.url("model-hub")).status_code == 200
        response = self.client.post(self.url("model-hub"), {"repo_id": REPO, "revision": ""})
        model = LLMModel.objects.for_organization(self.org_a).get()
        assert response.status_code == 302
        assert response["Location"] == reverse("explore:model-gpus", args=[model.slug])
        assert (model.name, model.hf_repo) == ("Qwen3-8B", REPO)
        assert model.params_total == QWEN3_8B_PARAMS
        assert model.slug.startswith("qwen3-8b-") and model.slug != "qwen3-8b"
        assert model.sources["hub"].endswith(f"/{REPO}/tree/{self.hub.repos[REPO].sha}")
        assert model.history.latest().history_user == self.dave
        sizes = {w.quant: w.file_bytes for w in ModelWeights.objects.filter(model=model)}
        assert sizes == {
            "Q4_K_M": Q4_K_M, "Q8_0": Q8_0, "Q6_K": sum(Q6_K_PARTS), "bf16": sum(SAFETENSORS)
        }  # fmt: skip
        listed = self.client.get(self.url("models")).content.decode()
        assert "Q4_K_M" in listed and self.url("model-hub") in listed

    def test_the_import_is_sized_for_its_organisation_only(self) -> None:
        result = services.own_model_import_hub(tenant=self.tenant(), user=self.alice, repo_id=REPO)
        slug = result.model.slug
        assert not LLMModel.objects.filter(slug=slug).exists()  # not in the public catalog
        assert not LLMModel.objects.visible_to([self.org_b]).filter(slug=slug).exists()
        card = Accelerator.objects.create(
            vendor="NVIDIA", name="Test 24", slug="test-24", memory_gb=24, memory_gib=24,
            bandwidth_gbps=1000, fp16_tflops=160, memory_type="GDDR6X",
        )  # fmt: skip
        configure = reverse("configurator:configure", args=[slug, card.slug]) + "?quant=Q4_K_M"
        self.client.force_login(self.bob)  # a viewer of org A sizes it
        page = self.client.get(configure)
        assert page.status_code == 200 and b"Qwen3-8B" in page.content
        self.client.force_login(self.charlie)
        assert self.client.get(configure).status_code == 404
        assert self.client.get(reverse("explore:model-gpus", args=[slug])).status_code == 404
        assert self.client.get(self.url("model-hub")).status_code == 404
        assert self.client.post(self.url("model-hub"), {"repo_id": REPO}).status_code == 404

    def test_a_viewer_may_not_import(self) -> None:
        self.client.force_login(self.bob)
        assert self.client.get(self.url("model-hub")).status_code == 403
        assert self.client.post(self.url("model-hub"), {"repo_id": REPO}).status_code == 403
        with pytest.raises(PermissionDenied):
            services.own_model_import_hub(tenant=self.tenant(self.bob), user=self.bob, repo_id=REPO)
        assert self.hub.requests == []

    def test_importing_again_updates_the_organisations_row(self) -> None:
        first = services.own_model_import_hub(tenant=self.tenant(), user=self.alice, repo_id=REPO)
        again = services.own_model_import_hub(
            tenant=self.tenant(self.dave), user=self.dave, repo_id=REPO
        )
        assert not again.created and again.model.pk == first.model.pk
        assert LLMModel.objects.for_organization(self.org_a).count() == 1
        assert ModelWeights.objects.filter(model=first.model).count() == 4
        assert len(self.hub.api_calls()) == 1  # the second answer came from the cache
        # Another organisation's import of the same repository is its own row, as is the
        # public catalog's.
        other = services.own_model_import_hub(
            tenant=self.tenant(self.charlie, "org-b"), user=self.charlie, repo_id=REPO
        )
        public = model_import_hub(repo_id=REPO)
        assert len({first.model.pk, other.model.pk, public.model.pk}) == 3
        assert public.model.organization is None and other.model.organization == self.org_b

    def test_a_config_json_import_of_the_same_base_is_not_overwritten(self) -> None:
        tuned = services.own_model_import_config(
            tenant=self.tenant(), user=self.alice, name="Fine-tune", config=QWEN3_8B, hf_repo=REPO
        )
        imported = services.own_model_import_hub(
            tenant=self.tenant(), user=self.alice, repo_id=REPO
        )
        assert imported.created and imported.model.pk != tuned.pk
        assert not ModelWeights.objects.filter(model=tuned).exists()

    def test_refusals_are_a_form_error_naming_the_reason(self) -> None:
        self.hub.repos["meta-llama/Llama-3.1-8B"] = qwen_repo(gated=True)
        self.client.force_login(self.dave)
        cases = {
            "meta-llama/Llama-3.1-8B": "is gated: accept its conditions on Hugging Face",
            "acme/missing": "There is no model repository acme/missing on Hugging Face",
            "not a repo": "Give the repository as owner/name",
        }
        for repo_id, message in cases.items():
            response = self.client.post(self.url("model-hub"), {"repo_id": repo_id})
            assert response.status_code == 400, repo_id
            assert message in response.content.decode(), repo_id
        response = self.client.post(self.url("model-hub"), {"repo_id": REPO, "revision": "v9"})
        assert response.status_code == 400
        assert "acme/Qwen3-8B has no revision “v9”." in response.content.decode()
        assert not LLMModel.all_orgs.exists()

    def test_a_private_repo_is_not_imported_for_an_organisation(self) -> None:
        self.hub.repos["acme/secret"] = qwen_repo(private=True)
        with pytest.raises(CatalogError, match="acme/secret is private"):
            services.own_model_import_hub(
                tenant=self.tenant(), user=self.alice, repo_id="acme/secret"
            )
        assert not LLMModel.all_orgs.exists()

    # --- manage.py import_hf ---------------------------------------------------------------

    def test_the_command_imports_a_public_model(self) -> None:
        out = io.StringIO()
        call_command("import_hf", REPO, stdout=out)
        model = LLMModel.objects.get(hf_repo=REPO)
        assert model.organization is None
        text = out.getvalue()
        assert f"created model qwen3-8b from {REPO}@" in text
        assert f"gguf Q4_K_M: {Q4_K_M} bytes (created)" in text
        out = io.StringIO()
        call_command("import_hf", REPO, "--revision", "main", stdout=out)
        assert "updated model qwen3-8b" in out.getvalue()
        assert f"gguf Q4_K_M: {Q4_K_M} bytes (updated)" in out.getvalue()
        assert LLMModel.all_orgs.count() == 1

    def test_the_command_imports_for_an_organisation(self) -> None:
        out = io.StringIO()
        call_command("import_hf", REPO, "--org", "org-b", stdout=out)
        model = LLMModel.all_orgs.get()
        assert model.organization == self.org_b and "for Org B" in out.getvalue()
        assert not LLMModel.objects.visible_to([self.org_a]).exists()

    def test_the_command_says_what_went_wrong(self) -> None:
        self.hub.repos["meta-llama/Llama-3.1-8B"] = qwen_repo(gated=True)
        with pytest.raises(CommandError, match=r"meta-llama/Llama-3\.1-8B is gated"):
            call_command("import_hf", "meta-llama/Llama-3.1-8B")
        with pytest.raises(CommandError, match="There is no model repository acme/x"):
            call_command("import_hf", "acme/x")
        with pytest.raises(CommandError, match="No organization with slug 'org-z'"):
            call_command("import_hf", REPO, "--org", "org-z")
        assert not LLMModel.all_orgs.exists()
