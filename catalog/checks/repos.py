"""weights-repo: every weights row downloads its own model.

A ModelWeights row's `repo` is what the launch commands download (llama.cpp ``-hf``,
Ollama ``hf.co/...``, ``vllm serve``), so a repository of another model, size or release
sends users the wrong weights. The rule, on names compared after lower-casing and
splitting at the separators - _ . (so "3.1", "3_1" and "3-1" agree; a size such as
"0.5B" stays one token):

- the model's name (its hf_repo after "org/", else its slug) gives its *core*, the tokens
  before its first size, variant or format token: Llama-3.1-8B-Instruct -> llama 3 1;
  Qwen2.5-7B-Instruct -> qwen2 5; DeepSeek-R1-0528 -> deepseek r1 0528;
- the repository's name must hold the core as consecutive tokens, followed by the model's
  own next token, a format token (GGUF, AWQ, FP8 ...) or nothing: Qwen2-7B does not hold
  qwen2 5, Qwen2.5-7B does not continue Qwen2's core with "7b", and DeepSeek-R1-0528
  continues DeepSeek-R1's with "0528", another release;
- every other token of the model's name (size "8b", active "a3b", variant "instruct",
  version "v0" "3", date "2407") must appear in the repository's name, and a variant the
  model lacks (an -Instruct repository for a base model) must not;
- the repository reads "org/name" in Hugging Face's characters (letters, digits, - _ .).

A pair that breaks the rule yet is right (a renamed repository) is listed with its source
in catalog/data/weights_repo_exceptions.csv. Rows without a repo are fine here.
"""

from __future__ import annotations

import csv
import re
from functools import cache
from pathlib import Path

from django.utils.translation import gettext as _

from catalog.checks import Violation
from catalog.models import ModelWeights

NAME = "weights-repo"
EXCEPTIONS_CSV = Path(__file__).resolve().parent.parent / "data" / "weights_repo_exceptions.csv"
# Hugging Face repository ids: an owner and a name of letters, digits, "-", "_" and ".".
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
# A parameter count (8b, 0.5b, 8x7b, a3b active, 128e experts) or a context tag (8k, 80k).
SIZE = re.compile(r"a?\d+(?:\.\d+)?(?:x\d+(?:\.\d+)?)?[bmtek]")
# Words that name an instruction-tuned or reasoning variant rather than the base model.
VARIANTS = frozenset({"instruct", "it", "chat", "thinking", "base"})
# Words that name a file format, quantization or uploader's recipe, never the model.
FORMATS = frozenset(
    {
        *("gguf", "awq", "gptq", "int4", "int8", "fp8", "fp4", "nvfp4", "mxfp4", "bf16"),
        *("fp16", "f16", "w8a8", "w4a16", "w4a8", "dynamic", "static", "hf", "pt", "mlx"),
        *("imatrix", "4bit", "8bit", "exl2", "quantized", "q4", "q8", "dwq", "ud"),
    }
)
# Publisher prefixes re-uploaders drop: Meta-Llama-3.1 is uploaded as Llama-3.1 too.
OPTIONAL_LEADING = frozenset({"meta", "nvidia"})


def tokens(name: str) -> list[str]:
    """Lower-case tokens split at - _ . and spaces; a size keeps its decimal point
    ("Qwen2.5-0.5B" -> qwen2 5 0.5b)."""
    out: list[str] = []
    for part in re.split(r"[-_\s]+", name.strip().lower()):
        if SIZE.fullmatch(part):
            out.append(part)
        else:
            out.extend(p for p in part.split(".") if p)
    return out


def _ends_core(token: str) -> bool:
    return bool(SIZE.fullmatch(token)) or token in VARIANTS or token in FORMATS


def model_tokens(model_name: str) -> tuple[list[str], list[str]]:
    """(core, rest) of a model's name: the tokens before its first size, variant or
    format token, and the other tokens that name it (formats dropped)."""
    found = tokens(model_name)
    cut = next((i for i, t in enumerate(found) if _ends_core(t)), len(found))
    rest = [t for t in found[cut:] if t not in FORMATS]
    return found[:cut], rest


def _core_at(repo: list[str], core: list[str]) -> list[int]:
    """The positions just past each occurrence of `core` in `repo`."""
    n = len(core)
    return [i + n for i in range(len(repo) - n + 1) if repo[i : i + n] == core]


def repo_problem(repo: str, model_name: str) -> str | None:
    """Why `repo` is not a repository of the model called `model_name`, None when it is."""
    if not REPO_ID.fullmatch(repo):
        return _("%(repo)s is not an org/name repository id (letters, digits, - _ . only)") % {
            "repo": repo
        }
    core, rest = model_tokens(model_name)
    if not core:
        return None
    found = tokens(repo.split("/", 1)[1])
    cores = [core]
    if len(core) > 1 and core[0] in OPTIONAL_LEADING:
        cores.append(core[1:])
    follow = rest[0] if rest else None
    ends = [end for c in cores for end in _core_at(found, c)]
    if not ends:
        return _("the name does not hold the model's %(core)s") % {"core": " ".join(core)}
    if not any(end == len(found) or found[end] in (follow, *FORMATS) for end in ends):
        nexts = ", ".join(sorted({found[end] for end in ends}))
        return _("%(core)s continues with %(next)s: another model, version or release") % {
            "core": " ".join(core),
            "next": nexts,
        }
    missing = [t for t in rest if t not in found]
    if missing:
        return _("the name lacks the model's %(tokens)s") % {"tokens": ", ".join(missing)}
    extra = sorted(t for t in set(found) & VARIANTS if t not in rest)
    if extra:
        return _("the name has %(tokens)s, which the model's does not") % {
            "tokens": ", ".join(extra)
        }
    return None


@cache
def exceptions() -> frozenset[tuple[str, str]]:
    """(repo, model_slug) pairs listed in weights_repo_exceptions.csv with a source."""
    with EXCEPTIONS_CSV.open(encoding="utf-8", newline="") as handle:
        return frozenset(
            (row["repo"].strip(), row["model_slug"].strip())
            for row in csv.DictReader(handle)
            if row.get("source", "").strip() and row.get("reason", "").strip()
        )


def row_label(weights: ModelWeights) -> str:
    return f"weights {weights.model.slug} {weights.format} {weights.quant}"


def check() -> list[Violation]:
    """Every public weights row with a repo, against its model's name (module docstring)."""
    rows = (
        ModelWeights.objects.filter(model__organization__isnull=True)
        .exclude(repo="")
        .select_related("model")
        .order_by("model__slug", "format", "quant")
    )
    allowed = exceptions()
    out = []
    for weights in rows:
        model = weights.model
        if (weights.repo, model.slug) in allowed:
            continue
        name = model.hf_repo.split("/", 1)[-1] if model.hf_repo else model.slug
        problem = repo_problem(weights.repo, name)
        if problem:
            message = _("repo %(repo)s is not %(model)s's: %(problem)s") % {
                "repo": weights.repo,
                "model": model.hf_repo or model.slug,
                "problem": problem,
            }
            out.append(Violation(NAME, row_label(weights), message))
    return out
