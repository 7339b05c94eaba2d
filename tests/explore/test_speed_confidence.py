"""Every surface that shows a speed says when no published measurement backs it, with the
one badge (explore/_bits.html#uncalibrated), and no filtered view ranks such a speed.

The real cases of the seed catalog: Llama 3.1 8B Q4_K_M on a Moore Threads MTT S4000 under
llama.cpp (MUSA: no rows at all) and on a Cambricon MLU590 (vLLM on MLU: no rows either) are
uncalibrated; on a GeForce RTX 4090 under llama.cpp (CUDA, NVIDIA rows) and on an Intel Arc
A770 under Ollama (Vulkan, with Intel Arc rows of its own) it is calibrated. One file for
all the surfaces: they share the seeded catalog and the cases, and the point is that none
of them drifts."""

from __future__ import annotations

import re

from django.urls import reverse

from sizing_site.configurator.state import configuration_size_by_slugs
from sizing_site.reports import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Role
from tests.explore.seeded import SeededCase

BADGE = 'data-calibration="uncalibrated"'
MODEL = "llama-3-1-8b"
MTT, RTX, MLU = "moore-threads-mtt-s4000", "nvidia-geforce-rtx-4090", "cambricon-mlu590"
ARC = "intel-arc-a770-16gb"
QUERY = {"quant": "Q4_K_M", "ctx": "8192"}
MTT_QUERY = {**QUERY, "engine": "llama.cpp"}  # llama.cpp runs on MUSA on Moore Threads
ARC_QUERY = {**QUERY, "engine": "ollama"}  # Ollama runs on Vulkan on Intel (its default)


def part(body: str, pattern: str) -> str:
    found = re.search(pattern, body, re.S)
    assert found is not None, pattern
    return found.group(1)


class ConfiguratorCase(SeededCase):
    def page(self, card: str, query: dict[str, str]) -> str:
        url = reverse("configurator:configure", args=[MODEL, card])
        response = self.client.get(url, query)
        assert response.status_code == 200
        return response.content.decode()

    def test_the_answer_panel_badges_an_uncalibrated_decode_speed(self) -> None:
        for card, query in ((MTT, MTT_QUERY), (MLU, {"ctx": "8192"})):
            tile = part(self.page(card, query), r'data-answer="decode">(.*?)</div>')
            assert BADGE in tile, card

    def test_the_answer_panel_shows_no_badge_for_a_calibrated_speed(self) -> None:
        tile = part(self.page(RTX, QUERY), r'data-answer="decode">(.*?)</div>')
        assert "tok/s" in tile
        assert BADGE not in tile

    def test_the_sentence_badges_an_uncalibrated_speed_only(self) -> None:
        mtt = part(self.page(MTT, MTT_QUERY), r'data-answer="sentence">(.*?)</p>')
        rtx = part(self.page(RTX, QUERY), r'data-answer="sentence">(.*?)</p>')
        assert "tokens per second" in mtt and BADGE in mtt
        assert "tokens per second" in rtx and BADGE not in rtx

    def test_the_estimate_api_says_whether_the_speed_is_calibrated(self) -> None:
        url = reverse("api:estimate")
        answers = {
            card: self.client.post(
                url, {"model": MODEL, "accelerator": card, **query}, content_type="application/json"
            ).json()
            for card, query in (
                (MTT, MTT_QUERY),
                (RTX, QUERY),
                (MLU, {"ctx": "8192"}),
                (ARC, ARC_QUERY),
            )
        }
        assert answers[MTT]["speed_calibrated"] is False
        assert answers[MLU]["speed_calibrated"] is False
        assert answers[RTX]["speed_calibrated"] is True
        assert answers[MTT]["setup"]["backend"] == "musa"
        assert answers[MTT]["decode_tokens_per_s"]["estimate"] > 0
        # Intel Arc under Vulkan: backed by Intel Arc rows, its family named
        assert answers[ARC]["speed_calibrated"] is True
        assert answers[ARC]["speed_family"]["family"] == "intel-arc"
        assert answers[RTX]["speed_family"]["label"].startswith("NVIDIA GeForce")

    def test_the_speed_section_names_the_hardware_family_behind_the_range(self) -> None:
        arc = part(self.page(ARC, ARC_QUERY), r'<section class="card" id="speed">(.*?)</section>')
        assert 'data-speed-family="intel-arc"' in arc and "Hardware family: Intel Arc" in arc
        assert 'data-speed="uncalibrated"' not in arc
        mtt = part(self.page(MTT, MTT_QUERY), r'<section class="card" id="speed">(.*?)</section>')
        assert 'data-speed="uncalibrated"' in mtt


class CompareCase(SeededCase):
    def test_compare_badges_the_uncalibrated_column_and_never_stars_it(self) -> None:
        response = self.client.get(
            reverse("explore:compare"),
            {"c1": f"{MODEL}:{MTT}:Q4_K_M:1:llama.cpp", "c2": f"{MODEL}:{RTX}:Q4_K_M:1"},
        )
        assert response.status_code == 200
        row = part(
            response.content.decode(), r"<tr[^>]*><th scope=\"row\">Decode[^<]*</th>(.*?)</tr>"
        )
        mtt, rtx = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        assert BADGE in mtt and "best-mark" not in mtt
        assert BADGE not in rtx


class ExploreFilterCase(SeededCase):
    def page(self, vendor: str) -> str:
        url = reverse("explore:model-gpus", args=["qwen3-32b"])
        response = self.client.get(url, {"vendor": vendor})
        assert response.status_code == 200
        return response.content.decode()

    def test_a_vendor_with_only_uncalibrated_cards_has_no_fastest_card(self) -> None:
        for vendor in ("Moore Threads", "Huawei"):
            body = self.page(vendor)
            fastest = part(body, r'data-summary="fastest">(.*?)</dd>')
            top = part(body, r'data-summary="top-speed">(.*?)</ol>')
            assert "no card that fits has a calibrated speed" in fastest, vendor
            assert "tok/s" not in fastest and "tok/s" not in top, vendor
            assert BADGE in part(body, r"<tbody>(.*?)</tbody>"), vendor

    def test_a_vendor_with_calibrated_cards_ranks_only_those(self) -> None:
        body = self.page("NVIDIA")
        assert "tok/s" in part(body, r'data-summary="fastest">(.*?)</dd>')
        assert BADGE not in part(body, r'data-summary="top-speed">(.*?)</ol>')

    def test_the_sweep_api_has_no_fastest_for_a_filter_of_uncalibrated_cards(self) -> None:
        url = reverse("api:sweeps-model-accelerators", args=["qwen3-32b"])
        data = self.client.get(url, {"vendor": "Huawei"}).json()
        assert data["results"], "Huawei cards run it"
        assert all(row["fit"]["calibrated"] is False for row in data["results"])
        assert data["summary"]["fastest"] is None


class ReportCase(SeededCase):
    def save(self, card: str, query: dict[str, str]) -> str:
        saved = services.saved_configuration_create(
            tenant=tenant_for(self.alice, "org-a", min_role=Role.EDITOR),
            user=self.alice,
            name=card,
            notes="",
            tags=[],
            state=configuration_size_by_slugs(model_slug=MODEL, accelerator_slug=card, data=query),
        )
        self.client.force_login(self.alice)
        response = self.client.get(reverse("reports:report", args=["org-a", saved.code]))
        assert response.status_code == 200
        return response.content.decode()

    def test_a_report_badges_an_uncalibrated_speed(self) -> None:
        body = self.save(MTT, MTT_QUERY)
        assert BADGE in part(body, r'<strong class="decode">(.*?)</dd>')
        assert 'data-speed="uncalibrated"' in body

    def test_a_report_of_a_calibrated_speed_has_no_badge(self) -> None:
        body = self.save(RTX, QUERY)
        assert 'class="decode"' in body
        assert BADGE not in body
