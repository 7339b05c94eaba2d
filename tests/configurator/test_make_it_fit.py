"""Make it fit on the configurator page, and the answer when the sequences are the cause:
GLM-4.5-Air (its real config) on an A100 80GB PCIe, where eight sequences of 24,576 tokens
do not fit but three do. Every option is a link to the state that applies it, and every
link, followed, leads to a page whose verdict is comfortable or tight."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from django.urls import reverse
from django.utils import translation

from estimator.recommend import PlanStep
from estimator.units import GIB
from sizing_site.configurator import fit_options as fit_module
from sizing_site.configurator.state import configuration_size
from tests.configurator.test_answer import answer_html
from tests.configurator.test_views import GlmOnA100

# GLM-4.5-Air Q4_K_M under llama.cpp on 80 GiB: 8 x 24,576 tokens of f16 KV do not fit.
EIGHT = {"engine": "llama.cpp", "quant": "Q4_K_M", "ctx": "24576", "seqs": "8"}
# Seeded states that need a plan: the sequences, the context, the weights or the KV type
# at fault, under llama.cpp and the serving engines.
SEEDED = (
    EIGHT,
    {"engine": "llama.cpp", "quant": "Q8_0", "ctx": "8192"},
    {"engine": "llama.cpp", "quant": "Q4_K_M", "ctx": "131072"},
    {"engine": "llama.cpp", "quant": "Q4_K_M", "ctx": "32768", "seqs": "4", "kv": "q8_0"},
    {"engine": "vllm", "quant": "awq-int4", "ctx": "24576", "seqs": "8"},
    {"engine": "vllm", "quant": "bf16", "ctx": "8192"},
    {"engine": "sglang", "quant": "awq-int4", "ctx": "65536", "seqs": "4"},
)
LINK = re.compile(r'<li data-fit-option="([\w]+)"><a href="([^"]+)" hx-get="([^"]+)"')


def options(body: str) -> list[tuple[str, str]]:
    """(action, address) of every make-it-fit link on a page."""
    found = []
    for action, href, hx_get in LINK.findall(body):
        assert href == hx_get  # the same state with and without JavaScript
        found.append((action, html.unescape(href)))
    return found


class MakeItFitCase(GlmOnA100):
    """The configurator's test pair (GLM-4.5-Air on an A100 80GB PCIe)."""

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def url(self) -> str:
        return reverse("configurator:configure", args=["glm-4-5-air", "nvidia-a100-80gb-pcie"])

    def page(self, **params: str) -> Any:
        response = self.client.get(self.url(), params)
        assert response.status_code == 200, response.content[:400]
        return response


class SequencesAreTheCause(MakeItFitCase):
    def test_the_answer_says_how_many_of_the_sequences_fit_and_never_blames_the_context(
        self,
    ) -> None:
        response = self.page(**EIGHT)
        eight = response.context["result"]
        assert eight.fit.verdict == "does_not_fit"
        # The estimator's capacity: 3 sequences of 24,576 tokens fit the 79 GiB llama.cpp
        # may use (80 GiB less its 1 GiB margin). Each one adds 24,576 tokens x 46 layers x
        # 2 (K, V) x 8 KV heads x 128 x 2 bytes = 4,630,511,616 B (4.3125 GiB) of f16 KV.
        assert eight.max_concurrent_sequences == 3
        assert response.context["answer"].fitting_sequences == 3
        three = self.page(**{**EIGHT, "seqs": "3"}).context["result"]
        kv_each = 24576 * 46 * 2 * 8 * 128 * 2
        assert eight.kv_cache_bytes - three.kv_cache_bytes == 5 * kv_each
        assert three.per_device_bytes <= 80 * GIB < eight.per_device_bytes
        body = response.content.decode()
        sentence = answer_html(body, "sentence")
        assert sentence == (
            "No: GLM-4.5-Air Q4_K_M on 1× A100 80GB PCIe fits 3 of the 8 sequences at "
            "24,576 tokens: lower the sequences to 3, or use a smaller quant, more GPUs or "
            'CPU offload (see "Make it fit").'
        )
        assert "context" not in sentence  # the context is not the cause here
        assert answer_html(body, "sequences") == "3 of the 8 sequences fit"
        context = answer_html(body, "context")
        assert "with 8 sequences; 3 of them fit at 24,576 tokens" in context
        assert "up to 3 sequences" not in context
        nav = body.split('class="section-nav"')[1].split("</nav>")[0]
        assert 'href="#plan"' in nav

    def test_make_it_fit_offers_three_sequences_as_a_link_whose_page_fits(self) -> None:
        body = self.page(**EIGHT).content.decode()
        found = dict(options(body))
        address = found["fewer_sequences"]
        query = dict(parse_qsl(urlsplit(address).query))
        assert query["seqs"] == "3"
        # Everything else as the page had it: only the sequences change.
        assert {k: v for k, v in query.items() if k != "seqs"} == {
            **{k: v for k, v in EIGHT.items() if k != "seqs"},
            **{"gpus": "1", "kv": "f16", "prompt": "512", "output": "256", "offload": "0"},
        }
        assert "Lower the concurrent sequences to 3" in body
        assert "<code>-c 73728 -np 3</code>" in body  # llama.cpp's -c counts every slot
        followed = self.client.get(address)
        assert followed.status_code == 200
        assert followed.context["result"].fit.verdict in ("comfortable", "tight")
        assert followed.context["setup"].sequences == 3
        assert followed.context["answer"].fitting_sequences == 0
        assert answer_html(followed.content.decode(), "sentence").startswith("Yes: ")

    def test_one_sequence_asked_never_mentions_sequences(self) -> None:
        response = self.page(engine="llama.cpp", quant="Q4_K_M", ctx="131072")
        assert response.context["result"].fit.verdict == "does_not_fit"
        assert response.context["answer"].fitting_sequences == 0
        body = response.content.decode()
        assert "with 131,072 tokens of context" in answer_html(body, "sentence")
        assert 'data-answer="sequences"' not in body
        assert "fewer_sequences" not in dict(options(body))


class EveryLinkRuns(MakeItFitCase):
    def test_every_make_it_fit_link_followed_gives_a_fitting_or_tight_verdict(self) -> None:
        offered = 0
        for params in SEEDED:
            response = self.page(**params)
            plan = response.context["plan"]
            links = options(response.content.decode())
            assert len(links) == len(plan), params
            for option, (action, address) in zip(plan, links, strict=True):
                assert option.action == action and option.verdict in ("comfortable", "tight")
                followed = self.client.get(address)
                assert followed.status_code == 200, (params, address)
                verdict = followed.context["result"].fit.verdict
                # The verdict the option promised is the one its page shows.
                assert verdict == option.verdict, (params, action, verdict)
                offered += 1
        assert offered >= 2 * len(SEEDED)

    def test_options_whose_state_still_does_not_fit_are_dropped(self) -> None:
        # Three steps for the eight sequences: 16,384 tokens still does not fit (8 x 16,384
        # tokens of KV, 23 GiB, over the 13 GiB the weights leave), 3 sequences does, and
        # a memory share has no parameter on the page: only the second is offered.
        state = configuration_size(model=self.model, accelerator=self.card, data=EIGHT)
        assert not state.fits

        def step(action: str, change: dict[str, Any]) -> PlanStep:
            return PlanStep(action, "", ("-x",), True, "tight", 0, 0, 1.0, 24576, change)

        plan = [
            step("shorter_context", {"workload.context_tokens": 16384}),
            step("fewer_sequences", {"workload.concurrent_sequences": 3}),
            step("memory_share", {"engine.gpu_memory_utilization": 0.95}),
        ]
        shorter = configuration_size(
            model=self.model, accelerator=self.card, data={**EIGHT, "ctx": "16384"}
        )
        assert shorter.sized.result.fit.verdict == "does_not_fit"
        [kept] = fit_module._options(state, plan)  # not the cached plan of this setup
        assert (kept.action, kept.value, kept.query["seqs"]) == ("fewer_sequences", 3, "3")
        assert kept.verdict in ("comfortable", "tight")
        # On the page, the estimator's own plan offers no step that does not fit either.
        response = self.page(engine="llama.cpp", quant="BF16", ctx="8192")
        assert response.context["result"].fit.verdict == "does_not_fit"
        assert response.context["plan"]
        assert all(option.verdict != "does_not_fit" for option in response.context["plan"])

    def test_a_make_it_fit_link_swaps_the_form_and_the_results_together(self) -> None:
        body = self.page(**EIGHT).content.decode()
        address = dict(options(body))["fewer_sequences"]
        swapped = self.client.get(
            address, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="cfg-layout"
        ).content.decode()
        assert swapped.lstrip().startswith('<div class="cfg-layout" id="cfg-layout">')
        assert re.search(r'<input[^>]*name="seqs"[^>]*value="3"', swapped)
        assert 'id="results"' in swapped and 'hx-swap-oob="true"' not in swapped
        # The form's own swap still gets the results alone, with the form's parts out of band.
        results = self.client.get(address, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results")
        text = results.content.decode()
        assert text.lstrip().startswith('<div id="results"') and 'hx-swap-oob="true"' in text
