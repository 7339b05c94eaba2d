"""The catalog's detail and list pages link to the sizing views; curation notes, raw source
texts and field keys are for staff; sources are labelled links; a "from" price says it is
the base configuration's."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator, LLMModel
from catalog.templatetags.catalog_sources import link_label, links_in
from catalog.views import q4_need_gib
from estimator.units import GIB
from estimator.validate import rebuilt_config
from tests.cast import CastTestCase

GLM = rebuilt_config("GLM-4.5-Air")
NOTE = (
    "No verbatim config.json copy was found in the stored sources this session; "
    "config_file left null."
)
CONFLICT = "CONFLICT: github ying-wen/evokernel-spec lists 64 GB"


def card(slug: str, gib: int, **extra: object) -> Accelerator:
    return Accelerator.objects.create(
        vendor=str(extra.pop("vendor", "NVIDIA")),
        name=slug.replace("-", " ").title(),
        slug=slug,
        memory_gb=gib,
        memory_gib=gib,
        bandwidth_gbps=1000,
        architecture=str(extra.pop("architecture", "Ada Lovelace")),
        curated=True,
        **extra,
    )


class DetailLinks(CastTestCase):
    staff: User
    cards: dict[str, Accelerator]
    small: LLMModel
    big: LLMModel
    mid: LLMModel
    unsizable: LLMModel

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.staff = User.objects.create_user("sam", "sam@example.org", "pw-sam-123", is_staff=True)
        # The detail pages' default cards, by memory: 12, 24, 32, 80 and 141 GiB.
        cls.cards = {
            slug: card(slug, gib)
            for slug, gib in [
                ("nvidia-geforce-rtx-3060-12gb", 12),
                ("nvidia-geforce-rtx-4090", 24),
                ("nvidia-geforce-rtx-5090", 32),
                ("nvidia-h100-pcie-80gb", 80),
                ("nvidia-h200-sxm-141gb", 141),
            ]
        }
        cls.small = LLMModel.objects.create(
            name="Small 8B",
            slug="llama-3-1-8b-instruct",
            config=GLM,
            params_total=8 * 10**9,
            hf_repo="org/small",
            notes=NOTE,
            sources={
                "params_total_published": (
                    "https://huggingface.co/org/small (model card 'Number of Parameters')"
                ),
                "release_date": "https://qwenlm.github.io/blog/x/ (release blog, 2025-04-29)",
                "config": "none: no verbatim config.json of this repo found in the stored sources",
            },
        )
        cls.big = LLMModel.objects.create(
            name="Big 671B", slug="deepseek-r1", config=GLM, params_total=671 * 10**9
        )
        cls.mid = LLMModel.objects.create(
            name="Mid 70B", slug="llama-3-3-70b-instruct", config=GLM, params_total=70 * 10**9
        )
        cls.unsizable = LLMModel.objects.create(name="No config", slug="no-config")

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def page(self, name: str, slug: str) -> str:
        response = self.client.get(reverse(name, args=[slug]))
        assert response.status_code == 200
        return response.content.decode()

    def test_the_model_page_links_to_every_sizing_view(self) -> None:
        body = self.page("catalog:model-detail", "llama-3-1-8b-instruct")
        assert f'href="{reverse("explore:model-gpus", args=["llama-3-1-8b-instruct"])}"' in body
        # 8e9 parameters x 4.85/8 bytes x 1.2 headroom = 5.82e9 B = 5.42 GiB: the RTX 3060
        # (12 GiB, 0.9 x 12 = 10.8 usable) is the smallest default card that holds it.
        assert round(q4_need_gib(8e9), 2) == 5.42
        configure = reverse(
            "configurator:configure", args=["llama-3-1-8b-instruct", "nvidia-geforce-rtx-3060-12gb"]
        )
        assert f'href="{configure}"' in body
        # Compare: that card and the next one up, at Q4_K_M on one GPU each.
        query = urlencode(
            {
                "c1": "llama-3-1-8b-instruct:nvidia-geforce-rtx-3060-12gb:Q4_K_M:1",
                "c2": "llama-3-1-8b-instruct:nvidia-geforce-rtx-4090:Q4_K_M:1",
            },
            safe=":",
        )
        assert f'href="{reverse("explore:compare")}?{query.replace("&", "&amp;")}"' in body

    def test_a_model_bigger_than_every_card_gets_several_of_the_largest(self) -> None:
        body = self.page("catalog:model-detail", "deepseek-r1")
        # 671e9 x 4.85/8 x 1.2 / 2^30 = 454.6 GiB; the H200 offers 0.9 x 141 = 126.9 GiB:
        # ceil(454.6 / 126.9) = 4 GPUs.
        assert round(q4_need_gib(671e9), 1) == 454.6
        configure = reverse("configurator:configure", args=["deepseek-r1", "nvidia-h200-sxm-141gb"])
        assert f'href="{configure}?gpus=4"' in body
        assert "Configure it on 4 × Nvidia H200 Sxm 141Gb" in body

    def test_a_70b_model_goes_to_an_80_gib_card(self) -> None:
        body = self.page("catalog:model-detail", "llama-3-3-70b-instruct")
        # 70e9 x 4.85/8 x 1.2 / 2^30 = 47.4 GiB > 28.8 (the 5090's 0.9 x 32), <= 72 (H100).
        assert 28.8 < q4_need_gib(70e9) <= 72
        assert 'href="/en/models/llama-3-3-70b-instruct/on/nvidia-h100-pcie-80gb/"' in body

    def test_a_model_without_a_config_says_it_cannot_be_sized(self) -> None:
        body = self.page("catalog:model-detail", "no-config")
        assert "/gpus/" not in body
        assert "/on/" not in body
        assert "cannot size it" in body

    def test_the_accelerator_page_links_to_every_model_and_the_configurator(self) -> None:
        body = self.page("catalog:accelerator-detail", "nvidia-h100-pcie-80gb")
        assert f'href="{reverse("explore:gpu-models", args=["nvidia-h100-pcie-80gb"])}"' in body
        # The largest default model that 72 GiB holds at Q4_K_M: the 70B (47.4 GiB); the
        # 671B (454.6 GiB) does not fit.
        configure = reverse(
            "configurator:configure", args=["llama-3-3-70b-instruct", "nvidia-h100-pcie-80gb"]
        )
        assert f'href="{configure}"' in body
        assert "Configure Mid 70B on it" in body

    def test_list_pages_link_to_the_sizing_views(self) -> None:
        body = self.client.get(reverse("catalog:model-list")).content.decode()
        assert f'href="{reverse("explore:model-gpus", args=["deepseek-r1"])}"' in body
        # No config.json, no link to a page that would be a 404.
        assert reverse("explore:model-gpus", args=["no-config"]) not in body
        cards = self.client.get(reverse("catalog:accelerator-list")).content.decode()
        assert f'href="{reverse("explore:gpu-models", args=["nvidia-geforce-rtx-4090"])}"' in cards

    def test_list_queries_stay_flat_with_the_new_links(self) -> None:
        def queries(url: str) -> int:
            with CaptureQueriesContext(connection) as ctx:
                assert self.client.get(url).status_code == 200
            return len(ctx.captured_queries)

        before = (
            queries(reverse("catalog:model-list")),
            queries(reverse("catalog:accelerator-list")),
        )
        for i in range(20):
            LLMModel.objects.create(name=f"M{i}", slug=f"m-{i}", config=GLM, params_total=10**9)
            card(f"c-{i}", 16)
        after = (
            queries(reverse("catalog:model-list")),
            queries(reverse("catalog:accelerator-list")),
        )
        assert after == before

    def test_curation_notes_and_raw_sources_are_for_staff_only(self) -> None:
        url = reverse("catalog:model-detail", args=["llama-3-1-8b-instruct"])
        viewer = self.client.get(url).content.decode()
        assert "No verbatim config.json copy" not in viewer
        assert "config_file left null" not in viewer
        assert "params_total_published" not in viewer  # no raw field key
        assert "Number of Parameters" not in viewer  # no provenance note
        assert "Curation notes" not in viewer
        # The sources as labelled links, with the facts by their labels.
        hf = '<a href="https://huggingface.co/org/small" rel="noopener noreferrer">'
        assert hf + "Hugging Face: org/small</a>" in viewer
        assert "Parameters (published)" in viewer
        assert (
            '<a href="https://qwenlm.github.io/blog/x/" rel="noopener noreferrer">Qwen blog</a>'
            in viewer
        )

        self.client.force_login(self.staff)
        staff = self.client.get(url).content.decode()
        assert "No verbatim config.json copy" in staff
        assert "Number of Parameters" in staff
        assert "Curation notes (visible to staff only)" in staff

    def test_an_accelerator_conflict_note_is_for_staff_only(self) -> None:
        card("cambricon-mlu590", 80, vendor="Cambricon", architecture="", notes=CONFLICT)
        url = reverse("catalog:accelerator-detail", args=["cambricon-mlu590"])
        assert "CONFLICT" not in self.client.get(url).content.decode()
        self.client.force_login(self.staff)
        assert CONFLICT in self.client.get(url).content.decode()

    def test_an_apple_from_price_is_labelled_as_the_base_configurations(self) -> None:
        card(
            "apple-mac-studio-m3-ultra-80-core-gpu-512gb",
            512,
            vendor="Apple",
            architecture="Apple M3",
            price_usd=3999,
            sources={"price_usd": "github ying-wen/evokernel-spec x.yaml (Mac Studio from $3,999)"},
        )
        body = self.page(
            "catalog:accelerator-detail", "apple-mac-studio-m3-ultra-80-core-gpu-512gb"
        )
        assert "from 3,999" in body
        assert "base configuration" in body and "this configuration costs more" in body
        assert 'href="https://github.com/ying-wen/evokernel-spec"' in body
        plain = self.page("catalog:accelerator-detail", "nvidia-geforce-rtx-4090")
        assert "base configuration" not in plain


def test_link_labels_name_the_site_or_document() -> None:
    assert link_label("https://huggingface.co/Qwen/Qwen3-32B") == "Hugging Face: Qwen/Qwen3-32B"
    assert link_label("https://huggingface.co/hardware/h100") == "Hugging Face"
    assert link_label("https://arxiv.org/abs/2505.09388") == "arXiv 2505.09388"
    assert (
        link_label("https://www.techpowerup.com/gpu-specs/l40s.c4173") == "TechPowerUp GPU database"
    )
    assert (
        link_label("https://github.com/ggml-org/llama.cpp/blob/master/docs/build.md")
        == "GitHub: ggml-org/llama.cpp, build.md"
    )
    assert link_label("https://en.wikipedia.org/wiki/GeForce_RTX_50_series") == (
        "Wikipedia: GeForce RTX 50 series"
    )
    assert link_label("https://example.org/page") == "example.org"


def test_links_are_found_once_and_notes_without_one_give_none() -> None:
    text = (
        "https://huggingface.co/a/b (card); https://huggingface.co/a/b (again) and "
        "github owner/repo path/file.md (table)."
    )
    assert [(link.url, link.label) for link in links_in(text)] == [
        ("https://huggingface.co/a/b", "Hugging Face: a/b"),
        ("https://github.com/owner/repo", "GitHub: owner/repo"),
    ]
    assert links_in("existing memory_gb source; HBM is built in binary sizes") == []
    assert links_in(None) == []
    assert 5.4 < q4_need_gib(8e9) < 5.5 and GIB == 2**30
