"""/api/v1/catalog/: the seeded catalog's rows as stored, filters, search, ordering, cursor
pages, conditional GETs, staff-only PATCH, flat query counts and no server error on any
query string."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.contrib.auth.models import Permission, User
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.hardware import support_matrix
from catalog.models import Accelerator, LLMModel, ModelWeights
from tests.explore.seeded import SeededCase

BASE = "/api/v1/catalog/"
RTX_4090 = "nvidia-geforce-rtx-4090"
LLAMA_8B = "llama-3-1-8b-instruct"


class CatalogApiCase(SeededCase):
    staff: User

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.staff = User.objects.create_user("staffer", "s@a.example", "pw-staff-123")
        cls.staff.is_staff = True
        cls.staff.save()
        # A catalog curator: may change the catalog's tables in admin, and so here.
        cls.staff.user_permissions.add(
            *Permission.objects.filter(
                content_type__app_label="catalog", codename__startswith="change_"
            )
        )

    def get_json(self, path: str, **params: Any) -> Any:
        response = self.client.get(path, params)
        self.assertEqual(response.status_code, 200, response.content[:300])
        return response.json()


class ReadTests(CatalogApiCase):
    def test_the_4090_is_the_database_row(self) -> None:
        row = Accelerator.objects.get(slug=RTX_4090)
        data = self.get_json(f"{BASE}accelerators/{RTX_4090}/")
        # The seed: 24 GB of GDDR6X at 21 Gbps x 384 bit / 8 = 1008 GB/s, $1,599 list.
        self.assertEqual((data["memory_gb"], data["bandwidth_gbps"]), (24.0, 1008.0))
        self.assertEqual(data["memory_gb"], row.memory_gb)
        self.assertEqual(data["bandwidth_gbps"], row.bandwidth_gbps)
        self.assertEqual(data["price_usd"], row.price_usd)
        self.assertEqual(data["sources"], row.sources)
        # The support matrix as the pages read it: llama.cpp on CUDA first, then vLLM.
        engines = [(e["engine"], e["backend"]) for e in data["engines"]]
        expected = [(c.engine, c.backend) for c in support_matrix().default_first(row)]
        self.assertEqual(engines, expected)
        self.assertEqual(engines[:2], [("llama.cpp", "cuda"), ("vllm", "cuda")])
        self.assertTrue(data["engines"][0]["default"])

    def test_search_4090_finds_it(self) -> None:
        slugs = [r["slug"] for r in self.get_json(f"{BASE}accelerators/", search="4090")["results"]]
        self.assertIn(RTX_4090, slugs)
        self.assertTrue(all("4090" in s for s in slugs), slugs)

    def test_filters(self) -> None:
        data = self.get_json(f"{BASE}accelerators/", vendor="nvidia", memory_min_gb="80")
        rows = data["results"]
        self.assertTrue(rows)
        self.assertTrue(all(r["vendor"] == "NVIDIA" and r["memory_gb"] >= 80 for r in rows))
        expected = Accelerator.objects.filter(vendor="NVIDIA", memory_gb__gte=80).count()
        self.assertEqual(len(rows), expected)
        consumer = self.get_json(f"{BASE}accelerators/", segment="consumer")["results"]
        self.assertEqual({r["segment"] for r in consumer}, {"consumer"})

    def test_ordering_by_memory(self) -> None:
        rows = self.get_json(f"{BASE}accelerators/", ordering="-memory_gb", page_size=200)[
            "results"
        ]
        memory = [r["memory_gb"] if r["memory_gb"] is not None else -1 for r in rows]
        self.assertEqual(memory, sorted(memory, reverse=True))
        self.assertEqual(len(rows), Accelerator.objects.count())
        top = Accelerator.objects.order_by("-memory_gb").values_list("memory_gb", flat=True)[0]
        self.assertEqual(rows[0]["memory_gb"], top)
        ascending = self.get_json(f"{BASE}accelerators/", ordering="memory_gb", page_size=200)
        self.assertEqual([r["slug"] for r in ascending["results"]][-1], rows[0]["slug"])

    def test_a_cursor_page_of_50_and_the_next(self) -> None:
        total = LLMModel.objects.count()
        self.assertGreater(total, 100)  # the seed holds 144 models: pages of 50, 50, 44
        first = self.get_json(f"{BASE}models/")
        self.assertEqual(len(first["results"]), 50)
        self.assertIsNone(first["previous"])
        seen = [r["slug"] for r in first["results"]]
        url = first["next"]
        while url:
            parts = urlsplit(url)
            page = self.get_json(parts.path, **{k: v[0] for k, v in parse_qs(parts.query).items()})
            seen += [r["slug"] for r in page["results"]]
            url = page["next"]
        self.assertEqual(len(seen), total)
        self.assertEqual(len(set(seen)), total)  # no row twice, none left out

    def test_page_size_is_capped_at_200(self) -> None:
        rows = self.get_json(f"{BASE}models/", page_size=500)["results"]
        self.assertEqual(len(rows), min(200, LLMModel.objects.count()))

    def test_model_summary_and_config(self) -> None:
        row = LLMModel.objects.get(slug=LLAMA_8B)
        listed = self.get_json(f"{BASE}models/", search="Llama 3.1 8B Instruct")["results"]
        summary = next(r for r in listed if r["slug"] == LLAMA_8B)
        self.assertNotIn("config", summary)
        self.assertEqual(summary["params_total"], row.params_total)
        self.assertEqual(summary["layers"], 32)  # config.json num_hidden_layers
        self.assertEqual(summary["max_context_tokens"], row.max_context_tokens)
        self.assertFalse(summary["moe"])
        detail = self.get_json(f"{BASE}models/{LLAMA_8B}/")
        self.assertEqual(detail["config"], row.config)
        weights = self.get_json(f"{BASE}models/{LLAMA_8B}/weights/", page_size=200)["results"]
        stored = ModelWeights.objects.filter(model=row)
        self.assertEqual(len(weights), stored.count())
        bf16 = next(w for w in weights if w["format"] == "gguf" and w["quant"] == "BF16")
        # Measured: the HF listing's 16.1 GB = 16.1 x 10^9 bytes.
        self.assertEqual(bf16["file_bytes"], 16_100_000_000)
        self.assertEqual(bf16["size_bytes"], 16_100_000_000)

    def test_model_filters(self) -> None:
        rows = self.get_json(f"{BASE}models/", params_min_b="60", params_max_b="80")["results"]
        self.assertTrue(rows)
        self.assertTrue(all(60e9 <= r["params_total"] <= 80e9 for r in rows))
        moe = self.get_json(f"{BASE}models/", moe="true", page_size=200)["results"]
        self.assertTrue(moe)
        self.assertTrue(all(r["moe"] for r in moe))
        self.assertEqual(len(moe), LLMModel.objects.filter(architecture__in=("moe", "mla")).count())

    def test_engines_and_quant_formats(self) -> None:
        engines = self.get_json(f"{BASE}engines/")["results"]
        self.assertIn("llama-cpp", [e["slug"] for e in engines])
        quant = self.get_json(f"{BASE}quant-formats/gguf-f32/")
        self.assertEqual((quant["bits_per_weight"], quant["family"]), (32.0, "gguf"))

    def test_unknown_slug_is_404_in_the_error_shape(self) -> None:
        response = self.client.get(f"{BASE}accelerators/no-such-card/")
        self.assertEqual(response.status_code, 404)
        self.assertIn("detail", response.json()["errors"])
        self.assertEqual(self.client.get(f"{BASE}models/no-such/weights/").status_code, 404)

    def test_bad_filter_is_a_400_naming_it(self) -> None:
        response = self.client.get(f"{BASE}accelerators/", {"memory_min_gb": "lots"})
        self.assertEqual(response.status_code, 400)
        self.assertEqual(list(response.json()["errors"]), ["memory_min_gb"])

    def test_anonymous_is_refused(self) -> None:
        self.client.logout()
        self.assertEqual(self.client.get(f"{BASE}models/").status_code, 403)


class ConditionalTests(CatalogApiCase):
    def test_if_none_match_answers_304_until_the_catalog_changes(self) -> None:
        url = f"{BASE}accelerators/{RTX_4090}/"
        first = self.client.get(url)
        etag = first["ETag"]
        self.assertTrue(first.has_header("Last-Modified"))
        again = self.client.get(url, headers={"If-None-Match": etag})
        self.assertEqual(again.status_code, 304)
        self.assertEqual(again.content, b"")
        self.assertEqual(
            self.client.get(url, headers={"If-None-Match": '"other"'}).status_code, 200
        )
        # An edit (admin, import, the API) starts a new catalog version: a new tag.
        card = Accelerator.objects.get(slug=RTX_4090)
        card.notes = "edited"
        card.save()
        changed = self.client.get(url, headers={"If-None-Match": etag})
        self.assertEqual(changed.status_code, 200)
        self.assertNotEqual(changed["ETag"], etag)


class WriteTests(CatalogApiCase):
    url = f"{BASE}accelerators/{RTX_4090}/"

    def patch(self, body: Any) -> Any:
        return self.client.patch(self.url, body, content_type="application/json")

    def test_a_non_staff_patch_is_403(self) -> None:
        response = self.patch({"price_usd": 1})
        self.assertEqual(response.status_code, 403)
        self.assertEqual(Accelerator.objects.get(slug=RTX_4090).price_usd, 1599.0)

    def test_staff_without_the_tables_change_permission_may_not_patch(self) -> None:
        # As in admin: being staff opens the door, the model permission allows the edit.
        # A staff member without catalog permissions once changed notes and prices here.
        helper = User.objects.create_user("helper", "h@a.example", "pw-help-123", is_staff=True)
        self.client.force_login(helper)
        assert self.patch({"price_usd": 1}).status_code == 403
        model_url = f"{BASE}models/{LLAMA_8B}/"
        response = self.client.patch(model_url, {"notes": "x"}, content_type="application/json")
        assert response.status_code == 403
        assert list(response.json()["errors"]) == ["detail"]
        # The card's change permission allows the card, not the model.
        helper.user_permissions.add(Permission.objects.get(codename="change_accelerator"))
        helper = User.objects.get(pk=helper.pk)  # a fresh permission cache
        self.client.force_login(helper)
        assert self.patch({"price_usd": 1799.5}).status_code == 200
        response = self.client.patch(model_url, {"notes": "x"}, content_type="application/json")
        assert response.status_code == 403
        assert Accelerator.objects.get(slug=RTX_4090).price_usd == 1799.5
        assert LLMModel.objects.get(slug=LLAMA_8B).notes != "x"

    def test_a_superuser_may_patch_without_listed_permissions(self) -> None:
        root = User.objects.create_superuser("root", "r@a.example", "pw-root-123")
        self.client.force_login(root)
        assert self.patch({"price_usd": 1700}).status_code == 200

    def test_a_staff_patch_of_price_changes_the_row(self) -> None:
        self.client.force_login(self.staff)
        response = self.patch({"price_usd": 1799.5})
        self.assertEqual(response.status_code, 200, response.content)
        self.assertEqual(response.json()["price_usd"], 1799.5)
        self.assertEqual(Accelerator.objects.get(slug=RTX_4090).price_usd, 1799.5)

    def test_staff_may_patch_only_the_listed_fields(self) -> None:
        self.client.force_login(self.staff)
        response = self.patch({"memory_gb": 48})
        self.assertEqual(response.status_code, 400)
        self.assertEqual(list(response.json()["errors"]), ["memory_gb"])
        negative = self.patch({"price_usd": -5})
        self.assertEqual(negative.status_code, 400)
        self.assertIn("price_usd", negative.json()["errors"])
        self.assertEqual(Accelerator.objects.get(slug=RTX_4090).memory_gb, 24.0)

    def test_other_writes_are_405_for_staff(self) -> None:
        self.client.force_login(self.staff)
        self.assertEqual(self.client.post(f"{BASE}accelerators/", {}).status_code, 405)
        self.assertEqual(self.client.delete(self.url).status_code, 405)
        self.assertEqual(self.client.put(self.url, {}).status_code, 405)
        weights = f"{BASE}models/{LLAMA_8B}/weights/"
        self.assertEqual(self.client.patch(weights, {}).status_code, 405)
        self.assertTrue(Accelerator.objects.filter(slug=RTX_4090).exists())


class QueryCountTests(CatalogApiCase):
    def count(self, path: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            response = self.client.get(path, {"page_size": "200"})
        self.assertEqual(response.status_code, 200)
        return len(queries)

    def test_query_counts_stay_flat_as_the_catalog_grows(self) -> None:
        paths = [
            f"{BASE}accelerators/",
            f"{BASE}accelerators/{RTX_4090}/",
            f"{BASE}models/",
            f"{BASE}models/{LLAMA_8B}/weights/",
            f"{BASE}engines/",
            f"{BASE}quant-formats/",
        ]
        before = [self.count(p) for p in paths]
        model = LLMModel.objects.get(slug=LLAMA_8B)
        Accelerator.objects.bulk_create(
            Accelerator(vendor="NVIDIA", name=f"Card {i}", slug=f"card-{i}", memory_gb=i)
            for i in range(120)
        )
        LLMModel.objects.bulk_create(
            LLMModel(name=f"Model {i}", slug=f"model-{i}", family="Zeta") for i in range(120)
        )
        ModelWeights.objects.bulk_create(
            ModelWeights(model=model, format="gguf", quant=f"Q{i}", file_bytes=i + 1)
            for i in range(60)
        )
        after = [self.count(p) for p in paths]
        self.assertEqual(before, after)
        # Session and user, the rows, and Last-Modified's MAX(updated); 404 checks and the
        # support matrix's two queries on the pages that need them.
        self.assertLessEqual(max(after), 6)


# Parameter names the endpoints read, plus DRF's and a stranger.
PARAMS = [
    "search",
    "ordering",
    "cursor",
    "page_size",
    "vendor",
    "segment",
    "memory_min_gb",
    "curated",
    "family",
    "params_min_b",
    "params_max_b",
    "moe",
    "format",
    "other",
]
VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "-1",
            "NaN",
            "inf",
            "1e999",
            "9" * 40,
            "-memory_gb",
            "memory_gb,name",
            "__all__",
            "cD1hYmM=",  # a cursor "p=abc": a position no number column holds
            "cD0yMDIzLTEzLTQ1",  # "p=2023-13-45": no date
            "bz0tNQ==",  # "o=-5"
            "true",
            "consumer",
            "Ωμέγα 🙂",
            "%",
            "'; DROP TABLE x; --",
        ]
    ),
    st.text(max_size=30).filter(lambda s: "\x00" not in s),
)
LISTS = [
    f"{BASE}models/",
    f"{BASE}models/{LLAMA_8B}/weights/",
    f"{BASE}accelerators/",
    f"{BASE}engines/",
    f"{BASE}quant-formats/",
    f"{BASE}accelerators/{RTX_4090}/",
]


class FuzzTests(CatalogApiCase):
    def test_no_query_string_is_a_server_error(self) -> None:
        @settings(
            max_examples=150,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(
            path=st.sampled_from(LISTS),
            params=st.dictionaries(st.sampled_from(PARAMS), VALUES, max_size=5),
        )
        def one(path: str, params: dict[str, str]) -> None:
            with transaction.atomic():
                response = self.client.get(path, params)
                transaction.set_rollback(True)
            self.assertIn(response.status_code, (200, 400, 404), (path, params))
            if response.status_code != 200:
                self.assertIn("errors", response.json())

        one()
