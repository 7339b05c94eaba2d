"""Importing a model from the Hugging Face Hub by its id, against a fake Hub on 127.0.0.1:
the config makes the model, the file list its weights rows with their exact byte sizes,
the answer is cached, every refusal is a clear message, and staff have it in admin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from catalog.hub import HubError, checkpoint_quant, gguf_quant, hub_repo_id
from catalog.models import Accelerator, LLMModel, ModelWeights, Origin
from catalog.services import CatalogError
from catalog.services.hub import model_import_hub
from catalog.sizing import Setup, size_setup
from tests.fakehub import COMMIT, FakeHub, FakeRepo

pytestmark = pytest.mark.django_db

CONFIGS = Path(__file__).resolve().parents[2] / "catalog" / "data" / "configs"
QWEN3_8B = (CONFIGS / "Qwen__Qwen3-8B.json").read_bytes()
# Counted by hand in tests/owncatalog/base.py (Qwen's card: 8.2B).
QWEN3_8B_PARAMS = 8_190_735_360
REPO = "acme/Qwen3-8B"
# The sizes a Hub listing gives, in bytes (made up, but of the right order).
Q4_K_M = 5_027_783_488
Q8_0 = 8_709_519_168
Q6_K_PARTS = (4_000_000_000, 2_725_000_000)  # one quant split into two files
SAFETENSORS = (9_000_000_000, 7_381_000_000)


def qwen_repo(**kwargs: Any) -> FakeRepo:
    files: dict[str, bytes | int] = {
        "config.json": QWEN3_8B,
        "README.md": b"# Qwen3-8B",
        "Qwen3-8B-Q4_K_M.gguf": Q4_K_M,
        "Qwen3-8B-Q8_0.gguf": Q8_0,
        "Q6_K/Qwen3-8B-Q6_K-00001-of-00002.gguf": Q6_K_PARTS[0],
        "Q6_K/Qwen3-8B-Q6_K-00002-of-00002.gguf": Q6_K_PARTS[1],
        "mmproj-Qwen3-8B-F16.gguf": 600_000_000,  # a projector: no quant of the model
        "model-00001-of-00002.safetensors": SAFETENSORS[0],
        "model-00002-of-00002.safetensors": SAFETENSORS[1],
        "model.safetensors.index.json": b"{}",
    }
    return FakeRepo(files=files, **kwargs)


def rows(model: LLMModel) -> dict[tuple[str, str], ModelWeights]:
    return {(w.format, w.quant): w for w in ModelWeights.objects.filter(model=model)}


def test_an_import_makes_the_model_from_its_config_and_a_row_per_weights_format(
    fake_hub: FakeHub,
) -> None:
    fake_hub.repos[REPO] = qwen_repo()
    result = model_import_hub(repo_id=REPO)
    model = result.model
    assert result.created and model.organization is None
    assert (model.slug, model.name, model.hf_repo) == ("qwen3-8b", "Qwen3-8B", REPO)
    assert model.params_total == model.params_active == QWEN3_8B_PARAMS
    assert (model.model_type, model.max_context_tokens) == ("qwen3", 40_960)
    tree = f"{fake_hub.endpoint}/{REPO}/tree/{COMMIT}"
    assert model.sources["hub"] == tree
    assert model.sources["config"] == f"{fake_hub.endpoint}/{REPO}/blob/{COMMIT}/config.json"
    found = rows(model)
    # Two GGUF quants, a split one summed, and the bf16 checkpoint (torch_dtype); the
    # projector is no quant of the model.
    assert {key: w.file_bytes for key, w in found.items()} == {
        ("gguf", "Q4_K_M"): Q4_K_M,
        ("gguf", "Q8_0"): Q8_0,
        ("gguf", "Q6_K"): sum(Q6_K_PARTS),
        ("hf", "bf16"): sum(SAFETENSORS),
    }
    assert all(w.repo == REPO and w.origin == Origin.IMPORT for w in found.values())
    assert found["gguf", "Q4_K_M"].file_bytes_source == f"{tree} (Qwen3-8B-Q4_K_M.gguf)"
    assert found["gguf", "Q6_K"].file_bytes_source == (
        f"{tree} (Q6_K/Qwen3-8B-Q6_K-00001-of-00002.gguf (+1))"
    )
    assert found["gguf", "Q4_K_M"].sources == {"file_bytes": f"{tree} (Qwen3-8B-Q4_K_M.gguf)"}
    # The estimator's own size beside the measured one, where it has a rule for the format.
    assert found["gguf", "Q4_K_M"].computed_bytes and found["hf", "bf16"].computed_bytes
    assert sorted(result.weights_created) == ["gguf:Q4_K_M", "gguf:Q6_K", "gguf:Q8_0", "hf:bf16"]


def test_the_imported_model_is_sized_with_its_listed_file_size(fake_hub: FakeHub) -> None:
    fake_hub.repos[REPO] = qwen_repo()
    model = model_import_hub(repo_id=REPO).model
    card = Accelerator.objects.create(
        vendor="NVIDIA", name="Test 24", slug="test-24", memory_gb=24, memory_gib=24,
        bandwidth_gbps=1000, fp16_tflops=160, memory_type="GDDR6X",
    )  # fmt: skip
    setup = Setup(quant="Q4_K_M", context_tokens=8192)
    sized = size_setup(model=model, accelerator=card, setup=setup)
    assert sized.result.weights_bytes == Q4_K_M
    assert sized.result.fit.verdict != "does_not_fit"
    client = Client()
    client.force_login(User.objects.create_user("viewer", "v@example.invalid", "pw-v-123"))
    page = client.get(reverse("configurator:configure", args=[model.slug, card.slug]))
    assert page.status_code == 200 and b"Qwen3-8B" in page.content


def test_a_second_import_is_answered_from_the_cache_and_updates_in_place(
    fake_hub: FakeHub,
) -> None:
    fake_hub.repos[REPO] = qwen_repo()
    first = model_import_hub(repo_id=REPO)
    calls = list(fake_hub.requests)
    assert [m for m, _p in calls] == ["GET", "HEAD", "GET"]  # model info, config.json
    again = model_import_hub(repo_id=REPO)
    assert fake_hub.requests == calls  # no new call to the Hub
    assert not again.created and again.model.pk == first.model.pk
    assert sorted(again.weights_updated) == sorted(first.weights_created)
    assert LLMModel.objects.count() == 1 and ModelWeights.objects.count() == 4


def test_an_import_of_another_revision_reads_it_and_updates_the_same_rows(
    fake_hub: FakeHub,
) -> None:
    fake_hub.repos[REPO] = qwen_repo(revisions=("main", "v2"))
    model = model_import_hub(repo_id=REPO).model
    fake_hub.repos[REPO].files["Qwen3-8B-Q4_K_M.gguf"] = Q4_K_M + 1
    again = model_import_hub(repo_id=REPO, revision="v2")
    assert again.model.pk == model.pk and len(fake_hub.api_calls()) == 2
    assert rows(model)["gguf", "Q4_K_M"].file_bytes == Q4_K_M + 1
    assert ModelWeights.objects.count() == 4


def test_a_curated_row_is_kept_and_noted(fake_hub: FakeHub) -> None:
    fake_hub.repos[REPO] = qwen_repo()
    model = model_import_hub(repo_id=REPO).model
    row = rows(model)["gguf", "Q8_0"]
    row.origin, row.file_bytes = Origin.SEED, 8_540_000_000
    row.save()
    again = model_import_hub(repo_id="https://huggingface.co/acme/Qwen3-8B/tree/main")
    assert rows(model)["gguf", "Q8_0"].file_bytes == 8_540_000_000
    assert again.notes == ["Q8_0: the catalog's own row is kept"]


def test_a_gated_repo_says_how_to_get_access_and_writes_nothing(fake_hub: FakeHub) -> None:
    fake_hub.repos["meta-llama/Llama-3.1-8B"] = qwen_repo(gated=True)
    with pytest.raises(HubError, match=r"meta-llama/Llama-3\.1-8B is gated: accept .*HF_TOKEN"):
        model_import_hub(repo_id="meta-llama/Llama-3.1-8B")
    assert not LLMModel.all_orgs.exists()


def test_a_missing_repo_or_revision_is_named(fake_hub: FakeHub) -> None:
    fake_hub.repos[REPO] = qwen_repo()
    with pytest.raises(HubError, match="There is no model repository acme/nothing on Hugging"):
        model_import_hub(repo_id="acme/nothing")
    with pytest.raises(HubError, match="acme/Qwen3-8B has no revision “v9”"):
        model_import_hub(repo_id=REPO, revision="v9")
    assert not LLMModel.all_orgs.exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (None, "has no config.json, so its size cannot be read"),
        (b'{"model_type": ', "The config.json of acme/broken: Not valid JSON"),
        (b"[1, 2]", "The config.json of acme/broken: A config.json must be a JSON object"),
        (b'{"model_type": "llama"}', "config.json must state the model's size"),
    ],
)
def test_a_repo_without_a_readable_config_is_refused(
    fake_hub: FakeHub, config: bytes | None, message: str
) -> None:
    files: dict[str, bytes | int] = {"model-Q4_K_M.gguf": Q4_K_M}
    if config is not None:
        files["config.json"] = config
    fake_hub.repos["acme/broken"] = FakeRepo(files=files)
    with pytest.raises(CatalogError) as err:
        model_import_hub(repo_id="acme/broken")
    assert message in str(err.value)
    assert not LLMModel.all_orgs.exists()


def test_the_hub_out_of_reach_is_a_clear_error() -> None:
    # tests/conftest.py points HF_ENDPOINT at a closed port of 127.0.0.1.
    with pytest.raises(HubError, match=r"Could not reach Hugging Face \(http://127\.0\.0\.1:9\)"):
        model_import_hub(repo_id=REPO)


@pytest.mark.parametrize(
    "text", ["", "Qwen3-8B", "a/b/c", "../etc/passwd", "a--b/c", "a/b..c", "a /b", "x/" + "y" * 99]
)
def test_a_bad_repo_id_is_refused_before_any_call(fake_hub: FakeHub, text: str) -> None:
    with pytest.raises(HubError, match="Give the repository as owner/name"):
        model_import_hub(repo_id=text)
    assert fake_hub.requests == []


def test_a_repo_address_is_read_as_its_id() -> None:
    assert hub_repo_id(" https://huggingface.co/Qwen/Qwen3-8B ") == "Qwen/Qwen3-8B"
    assert hub_repo_id("hf.co/unsloth/gpt-oss-20b-GGUF/blob/main/x.gguf") == (
        "unsloth/gpt-oss-20b-GGUF"
    )


@pytest.mark.parametrize(
    ("name", "quant"),
    [
        ("Meta-Llama-3.1-8B-Instruct-Q4_K_M", "Q4_K_M"),
        ("Qwen2.5-7B-Instruct-q8_0", "Q8_0"),
        ("DeepSeek-R1-UD-IQ1_S", "UD-IQ1_S"),
        ("Qwen3-30B-A3B-UD-Q4_K_XL", "UD-Q4_K_XL"),
        ("gpt-oss-20b-MXFP4", "MXFP4"),
        ("Llama-3.2-1B-Instruct-f16", "F16"),
        ("ggml-model-IQ4_XS", "IQ4_XS"),
        ("Qwen3-8B", ""),
    ],
)
def test_a_gguf_file_name_states_its_quant(name: str, quant: str) -> None:
    assert gguf_quant(name) == quant


FP8_BLOCK = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}
COMPRESSED = {"quant_method": "compressed-tensors", "format": "float-quantized"}


@pytest.mark.parametrize(
    ("config", "quant"),
    [
        ({"torch_dtype": "bfloat16"}, "bf16"),
        ({"dtype": "float16"}, "fp16"),
        ({"torch_dtype": "float32"}, "fp32"),
        ({}, "bf16"),
        ({"torch_dtype": "bfloat16", "quantization_config": FP8_BLOCK}, "fp8"),  # Qwen3-32B-FP8
        ({"quantization_config": {"quant_method": "mxfp4"}}, "mxfp4"),  # gpt-oss
        ({"quantization_config": {"quant_method": "awq", "bits": 4}}, "awq-int4"),
        ({"quantization_config": {"quant_method": "gptq", "bits": 8}}, "gptq-int8"),
        ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": 1}}, "bnb-4bit"),
        ({"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}, "nvfp4"),
        ({"text_config": {"quantization_config": {"quant_method": "fp8"}}}, "fp8"),
        (
            {"quantization_config": {**COMPRESSED, "config_groups": {"group_0": {
                "weights": {"num_bits": 8, "type": "float"}}}}},
            "fp8",
        ),
        (
            {"quantization_config": {**COMPRESSED, "format": "int-quantized", "config_groups": {
                "group_0": {"weights": {"num_bits": 8, "type": "int"},
                            "input_activations": {"num_bits": 8, "type": "int"}}}}},
            "w8a8",
        ),
        (
            {"quantization_config": {**COMPRESSED, "format": "pack-quantized", "config_groups": {
                "group_0": {"weights": {"num_bits": 4, "type": "int"}}}}},
            "w4a16",
        ),
        ({"quantization_config": {**COMPRESSED, "format": "nvfp4-pack-quantized"}}, "nvfp4"),
    ],
)  # fmt: skip
def test_the_checkpoint_format_comes_from_its_quantization_config(
    config: dict[str, Any], quant: str
) -> None:
    assert checkpoint_quant(config) == quant


def test_a_quantized_checkpoint_gets_its_format_and_an_incomplete_split_is_noted(
    fake_hub: FakeHub,
) -> None:
    config = {**json.loads(QWEN3_8B), "quantization_config": FP8_BLOCK}
    fake_hub.repos["acme/Qwen3-8B-FP8"] = FakeRepo(
        files={
            "config.json": json.dumps(config).encode(),
            "model.safetensors": 8_900_000_000,
            "Qwen3-8B-Q2_K-00001-of-00003.gguf": 1_000_000_000,
            "Qwen3-8B-Q2_K-00002-of-00003.gguf": 1_000_000_000,
        }
    )
    result = model_import_hub(repo_id="acme/Qwen3-8B-FP8")
    assert {k: w.file_bytes for k, w in rows(result.model).items()} == {
        ("hf", "fp8"): 8_900_000_000
    }
    assert result.notes == ["Qwen3-8B-Q2_K-00001-of-00003.gguf: 2 of 3 parts on the Hub"]


def test_another_publishers_model_of_the_same_name_gets_its_own_slug(fake_hub: FakeHub) -> None:
    fake_hub.repos[REPO] = qwen_repo()
    fake_hub.repos["other/Qwen3-8B"] = qwen_repo()
    first = model_import_hub(repo_id=REPO).model
    second = model_import_hub(repo_id="other/Qwen3-8B").model
    assert (first.slug, second.slug) == ("qwen3-8b", "other-qwen3-8b")


# --- admin -------------------------------------------------------------------------------


@pytest.fixture
def staff() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("staff", "s@example.invalid", "pw-s-123"))
    return client


def test_staff_import_a_repo_in_admin(fake_hub: FakeHub, staff: Client) -> None:
    fake_hub.repos[REPO] = qwen_repo()
    url = reverse("admin:catalog_llmmodel_import_hf")
    assert url.encode() in staff.get(reverse("admin:catalog_llmmodel_changelist")).content
    assert staff.get(url).status_code == 200
    response = staff.post(url, {"repo_id": REPO, "revision": ""})
    model = LLMModel.objects.get(hf_repo=REPO)
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:catalog_llmmodel_change", args=[model.pk])
    assert ModelWeights.objects.filter(model=model).count() == 4


def test_the_admin_import_shows_the_hubs_refusal_on_the_form(
    fake_hub: FakeHub, staff: Client
) -> None:
    response = staff.post(reverse("admin:catalog_llmmodel_import_hf"), {"repo_id": "acme/none"})
    assert response.status_code == 400
    assert b"There is no model repository acme/none on Hugging Face" in response.content


def test_the_admin_action_imports_the_selected_models_again(
    fake_hub: FakeHub, staff: Client
) -> None:
    fake_hub.repos[REPO] = qwen_repo()
    model = model_import_hub(repo_id=REPO).model
    ModelWeights.objects.filter(model=model).delete()
    changelist = reverse("admin:catalog_llmmodel_changelist")
    data = {"action": "hub_reimport", "_selected_action": [model.pk]}
    response = staff.post(changelist, data, follow=True)
    assert b"Models imported again: 1" in response.content
    assert ModelWeights.objects.filter(model=model).count() == 4


def test_a_plain_user_cannot_reach_the_admin_import(fake_hub: FakeHub) -> None:
    client = Client()
    client.force_login(User.objects.create_user("plain", "p@example.invalid", "pw-p-123"))
    response = client.post(reverse("admin:catalog_llmmodel_import_hf"), {"repo_id": REPO})
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert fake_hub.requests == []
