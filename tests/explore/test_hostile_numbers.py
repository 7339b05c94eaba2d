"""Hand-parsed numbers on the explore pages: only ASCII decimals count."""

from __future__ import annotations

from django.urls import reverse
from django.utils import translation

from sizing_site.explore.forms import ascii_count
from tests.reports.base import ReportsTestCase


def test_ascii_count_takes_ascii_decimals_in_range_only() -> None:
    assert ascii_count("1", most=16) == 1
    assert ascii_count("16", most=16) == 16
    # "²".isdigit() is True and int("²") raises; "٣" is an Arabic-Indic 3 int() accepts.
    for text in ("²", "٣", "0", "17", "-1", "+2", " 2", "1.0", "", "9" * 5000):
        assert ascii_count(text, most=16) is None, text


class CompareColumns(ReportsTestCase):
    def test_a_superscript_or_huge_gpu_count_is_a_400_with_the_reason(self) -> None:
        self.client.force_login(self.bob)
        with translation.override("en"):
            url = reverse("explore:compare")
        column = "glm-4-5-air:nvidia-a100-80gb-pcie:Q4_K_M:"
        for gpus in ("²", "٣", "9" * 5000):
            response = self.client.get(url, {"c1": column + gpus})
            assert response.status_code == 400, gpus
            assert "the GPU count must be a whole number" in response.content.decode()
        assert self.client.get(url, {"c1": column + "2"}).status_code == 200
