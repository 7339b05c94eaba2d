"""Read a model repository on the Hugging Face Hub: its config.json and the sizes of its
weights files, through huggingface_hub against settings.HF_ENDPOINT (the token is the
library's own: HF_TOKEN, or the login saved under HF_HOME).

One answer per repository and revision is kept in Django's cache for HUB_CACHE_SECONDS,
so importing the same repository again does not call the Hub. Every refusal (a bad id, a
missing, private or gated repository, no config.json, the Hub out of reach) is a HubError
whose message is shown as is. `hub_weights` turns the file list into weights rows: one per
GGUF quant (the parts of a split file summed) and one for the safetensors checkpoint, at
the format its config.json's quantization_config names.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import gettext as _
from huggingface_hub import HfApi, constants, hf_hub_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from catalog.services.common import CatalogError
from catalog.services.configs import MAX_CONFIG_BYTES, config_parse_text

logger = logging.getLogger(__name__)

# Telemetry off: with it on, huggingface_hub builds its User-Agent by fetching a list of
# AI agents from huggingface.co itself (whatever endpoint we pass) and writing it under
# HF_HOME, an outbound call nobody asked for.
constants.HF_HUB_DISABLE_TELEMETRY = True

# A repository's file list and config change rarely; an edit on the Hub shows after this.
HUB_CACHE_SECONDS = 6 * 3600
# Seconds for each call to the Hub (model info, then config.json's HEAD and GET).
HUB_TIMEOUT_S = 10
CACHE_PREFIX = "hf-hub:v1:"
# The Hub's rule (huggingface_hub.utils.validate_repo_id): word characters, "-" and ".",
# no "--" or "..", at most 96 characters; an import names both the owner and the model.
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
REPO_ID = re.compile(rf"{_PART}/{_PART}")
REVISION = re.compile(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*")
MAX_REPO_ID = 96
MAX_REVISION = 100
QUANT_MAX = 20  # ModelWeights.quant
SPLIT = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<parts>\d{5})$")
# llama.cpp's file types as uploaders spell them in file names ("Qwen3-8B-Q4_K_M.gguf",
# "UD-Q4_K_XL", "IQ2_XXS", "f16"), bounded by anything but a letter or digit.
GGUF_QUANT = re.compile(
    r"(?<![A-Za-z0-9])((?:UD-)?(?:I?Q\d(?:_[A-Z0-9]+)*|TQ\d_\d|BF16|F16|F32|MXFP4(?:_MOE)?))"
    r"(?![A-Za-z0-9])",
    re.IGNORECASE,
)
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float": "fp32"}


class HubError(CatalogError):
    """The Hub refused, or could not be reached; the message says what to do."""


@dataclass(frozen=True)
class HubFile:
    path: str
    size: int


@dataclass(frozen=True)
class HubRepo:
    """What the Hub said about one repository at one revision: the id as the Hub spells
    it, the commit the revision pointed to, its weights files (.gguf, .safetensors) with
    their sizes, and its parsed config.json."""

    endpoint: str
    repo_id: str
    revision: str
    sha: str
    gated: bool
    private: bool
    files: tuple[HubFile, ...]
    config: dict[str, Any]

    @property
    def name(self) -> str:
        return self.repo_id.split("/", 1)[1]

    @property
    def url(self) -> str:
        """The repository's files at the imported commit."""
        return f"{self.endpoint}/{self.repo_id}/tree/{self.sha}"

    def file_url(self, path: str) -> str:
        return f"{self.endpoint}/{self.repo_id}/blob/{self.sha}/{path}"


@dataclass(frozen=True)
class FoundWeights:
    """One weights row the repository supports: its format ("gguf" or "hf"), quant and
    the bytes of its files (all parts of a split GGUF)."""

    format: str
    quant: str
    file_bytes: int
    files: tuple[str, ...]


# --- input -------------------------------------------------------------------------------


def hub_repo_id(text: str) -> str:
    """The id ("owner/name") of a repository given by id or address; HubError if none."""
    value = text.strip()
    for prefix in (f"{settings.HF_ENDPOINT.rstrip('/')}/", "https://huggingface.co/", "hf.co/"):
        if value.startswith(prefix):
            value = "/".join(value.removeprefix(prefix).split("/")[:2])
    if len(value) > MAX_REPO_ID or not REPO_ID.fullmatch(value) or ".." in value or "--" in value:
        raise HubError(
            _("Give the repository as owner/name, e.g. Qwen/Qwen3-8B (got “%(text)s”).")
            % {"text": value[:120]}
        )
    return value


def hub_revision(text: str) -> str:
    """A branch, tag or commit (blank: main); HubError for anything else."""
    value = text.strip() or "main"
    if len(value) > MAX_REVISION or not REVISION.fullmatch(value) or ".." in value:
        raise HubError(_("“%(text)s” is not a branch, tag or commit name.") % {"text": value[:120]})
    return value


# --- reading the Hub -----------------------------------------------------------------------


def hub_repo_read(*, repo_id: str, revision: str = "main") -> HubRepo:
    """The repository at `revision`: from the cache when it answered within
    HUB_CACHE_SECONDS, else from the Hub (two calls: the model's info with its file
    sizes, then config.json at the commit that info named)."""
    repo_id, revision = hub_repo_id(repo_id), hub_revision(revision)
    endpoint = settings.HF_ENDPOINT.rstrip("/")
    key = CACHE_PREFIX + hashlib.sha256(f"{endpoint}\n{repo_id}\n{revision}".encode()).hexdigest()
    try:
        cached = cache.get(key)
    except Exception:  # any backend's connection error: ask the Hub instead
        logger.warning("cache unreachable: reading the Hub", exc_info=True)
        cached = None
    if isinstance(cached, dict):
        return _repo_from(cached)
    repo = _fetch(endpoint, repo_id, revision)
    try:
        cache.set(key, _repo_to(repo), timeout=HUB_CACHE_SECONDS)
    except Exception:
        logger.warning("cache unreachable: Hub answer not kept", exc_info=True)
    return repo


def _fetch(endpoint: str, repo_id: str, revision: str) -> HubRepo:
    api = HfApi(endpoint=endpoint, library_name="rightsize")
    with _hub_errors(repo_id, revision, endpoint):
        info = api.model_info(
            repo_id, revision=revision, files_metadata=True, timeout=HUB_TIMEOUT_S
        )
    sizes: dict[str, int | None] = {
        s.rfilename: (s.lfs.size if s.lfs is not None else s.size) for s in info.siblings or []
    }
    if "config.json" not in sizes:
        raise HubError(_no_config(repo_id))
    if (sizes["config.json"] or 0) > MAX_CONFIG_BYTES:
        raise HubError(_("The config.json of %(repo)s is over 1 MB.") % {"repo": repo_id})
    sha = info.sha or revision
    with _hub_errors(repo_id, revision, endpoint):
        text = _download_config(endpoint, info.id or repo_id, sha)
    try:
        config = config_parse_text(text=text)
    except CatalogError as exc:
        raise HubError(
            _("The config.json of %(repo)s: %(error)s") % {"repo": repo_id, "error": exc.message}
        ) from None
    files = tuple(
        HubFile(path, size)
        for path, size in sorted(sizes.items())
        if path.endswith((".gguf", ".safetensors")) and size
    )
    return HubRepo(
        endpoint=endpoint,
        repo_id=info.id or repo_id,
        revision=revision,
        sha=sha,
        gated=bool(info.gated),
        private=bool(info.private),
        files=files,
        config=config,
    )


def _download_config(endpoint: str, repo_id: str, sha: str) -> bytes:
    """config.json's bytes (at most one past the cap), through a scratch cache folder:
    huggingface_hub downloads only into a folder, and the portal keeps no files."""
    with tempfile.TemporaryDirectory(prefix="rightsize-hub-") as folder:
        path = hf_hub_download(
            repo_id,
            "config.json",
            revision=sha,
            endpoint=endpoint,
            cache_dir=folder,
            library_name="rightsize",
            etag_timeout=HUB_TIMEOUT_S,
        )
        with Path(path).open("rb") as fh:
            return fh.read(MAX_CONFIG_BYTES + 1)


def _no_config(repo_id: str) -> str:
    return _(
        "%(repo)s has no config.json, so its size cannot be read. For a repository of GGUF "
        "files only, import the original model's repository, or add the GGUF file on the "
        "own models page (only its header is read)."
    ) % {"repo": repo_id}


@contextmanager
def _hub_errors(repo_id: str, revision: str, endpoint: str) -> Iterator[None]:
    """The library's exceptions as HubError messages (most specific first: a gated
    repository's error is a kind of "not found", a network failure during the download a
    kind of "entry not found")."""
    names = {"repo": repo_id, "revision": revision, "endpoint": endpoint}
    try:
        yield
    except GatedRepoError:
        raise HubError(
            _(
                "%(repo)s is gated: accept its conditions on Hugging Face with the account "
                "whose token the portal uses (HF_TOKEN), then import again."
            )
            % names
        ) from None
    except RepositoryNotFoundError:
        raise HubError(
            _("There is no model repository %(repo)s on Hugging Face, or it is private.") % names
        ) from None
    except RevisionNotFoundError:
        raise HubError(_("%(repo)s has no revision “%(revision)s”.") % names) from None
    except LocalEntryNotFoundError:
        logger.warning("Hub unreachable for %s", repo_id, exc_info=True)
        raise HubError(_unreachable(names)) from None
    except EntryNotFoundError:
        raise HubError(_no_config(repo_id)) from None
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise HubError(
            _("Hugging Face answered %(status)s for %(repo)s; try again later.")
            % {**names, "status": status}
        ) from None
    except Exception:  # the library lets its HTTP client's transport errors through
        logger.warning("Hub unreachable for %s", repo_id, exc_info=True)
        raise HubError(_unreachable(names)) from None


def _unreachable(names: Mapping[str, str]) -> str:
    return _("Could not reach Hugging Face (%(endpoint)s); try again later.") % names


def _repo_to(repo: HubRepo) -> dict[str, Any]:
    return {
        "endpoint": repo.endpoint,
        "repo_id": repo.repo_id,
        "revision": repo.revision,
        "sha": repo.sha,
        "gated": repo.gated,
        "private": repo.private,
        "files": [[f.path, f.size] for f in repo.files],
        "config": repo.config,
    }


def _repo_from(data: dict[str, Any]) -> HubRepo:
    return HubRepo(
        **{k: v for k, v in data.items() if k != "files"},
        files=tuple(HubFile(str(path), int(size)) for path, size in data["files"]),
    )


# --- weights rows from the file list ---------------------------------------------------------


def hub_weights(repo: HubRepo) -> tuple[list[FoundWeights], list[str]]:
    """The weights rows the repository's files support, and a note for each file left out
    (a projector, a quant already seen, an incomplete split, an unreadable name)."""
    gguf, notes = _gguf_weights([f for f in repo.files if f.path.endswith(".gguf")])
    checkpoint = _safetensors_weights(
        [f for f in repo.files if f.path.endswith(".safetensors")], repo.config
    )
    return gguf + checkpoint, notes


def _gguf_weights(files: Sequence[HubFile]) -> tuple[list[FoundWeights], list[str]]:
    groups: dict[tuple[str, str], list[HubFile]] = {}
    expected: dict[tuple[str, str], int] = {}
    notes: list[str] = []
    for file in files:
        folder, _sep, base = file.path.rpartition("/")
        if "mmproj" in base.lower():
            continue  # a vision projector, loaded beside the model, not a quant of it
        stem = base.removesuffix(".gguf")
        split = SPLIT.match(stem)
        key = (folder, split["stem"] if split else stem)
        groups.setdefault(key, []).append(file)
        expected[key] = int(split["parts"]) if split else 1
    found: dict[str, FoundWeights] = {}
    for (folder, stem), parts in sorted(groups.items()):
        paths = tuple(f.path for f in parts)
        quant = gguf_quant(stem) or gguf_quant(folder.rpartition("/")[2])
        if not quant:
            notes.append(_("%(file)s: no quant in its name") % {"file": paths[0]})
        elif len(parts) != expected[(folder, stem)]:
            notes.append(
                _("%(file)s: %(n)s of %(parts)s parts on the Hub")
                % {"file": paths[0], "n": len(parts), "parts": expected[(folder, stem)]}
            )
        elif quant in found:
            notes.append(
                _("%(file)s: %(quant)s already read from %(other)s")
                % {"file": paths[0], "quant": quant, "other": found[quant].files[0]}
            )
        else:
            found[quant] = FoundWeights("gguf", quant, sum(f.size for f in parts), paths)
    return list(found.values()), notes


def gguf_quant(name: str) -> str:
    """The llama.cpp file type a GGUF file's name (or folder) states, "" when none: the
    last match, since model names hold digits too ("Qwen2.5-7B-Instruct-Q4_K_M")."""
    matches = GGUF_QUANT.findall(name)
    quant = matches[-1].upper() if matches else ""
    return quant if len(quant) <= QUANT_MAX else ""


def _safetensors_weights(files: Sequence[HubFile], config: Mapping[str, Any]) -> list[FoundWeights]:
    """The checkpoint in the repository's top folder (sub-folders hold other things: a
    vision tower, an original export). Mistral's consolidated.safetensors repeats the
    model-*.safetensors shards: counted only when it is the only file."""
    top = [f for f in files if "/" not in f.path]
    shards = [f for f in top if not f.path.startswith("consolidated")] or top
    if not shards:
        return []
    total = sum(f.size for f in shards)
    quant = checkpoint_quant(config)
    return [FoundWeights("hf", quant, total, tuple(f.path for f in shards))]


def _scopes(config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    nested = [config[k] for k in ("text_config", "llm_config") if isinstance(config.get(k), dict)]
    return [config, *nested]


def checkpoint_quant(config: Mapping[str, Any]) -> str:
    """The checkpoint's weights format as the catalog names it (estimator.weights.hf):
    from quantization_config when there is one (fp8, awq-int4, gptq-int4, w8a8, mxfp4,
    nvfp4, ...), else from torch_dtype (bf16, fp16, fp32; bf16 when unstated)."""
    for scope in _scopes(config):
        quantization = scope.get("quantization_config")
        if isinstance(quantization, dict):
            return _quantized(quantization)[:QUANT_MAX]
    for scope in _scopes(config):
        dtype = scope.get("torch_dtype") or scope.get("dtype")
        if isinstance(dtype, str) and dtype in TORCH_DTYPES:
            return TORCH_DTYPES[dtype]
    return "bf16"


def _quantized(quantization: Mapping[str, Any]) -> str:
    method = str(quantization.get("quant_method") or "").lower()
    bits = quantization.get("bits") or quantization.get("w_bit") or 4
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8"
    if method in ("awq", "gptq"):
        return f"{method}-int{bits}"
    if method == "mxfp4":
        return "mxfp4"
    if method == "compressed-tensors":
        return _compressed(quantization)
    if method == "modelopt":
        algo = str(quantization.get("quant_algo") or "").lower()
        return {"fp8": "fp8", "nvfp4": "nvfp4"}.get(algo, algo or "modelopt")
    if method == "bitsandbytes":
        return "bnb-4bit" if quantization.get("load_in_4bit") else "bnb-8bit"
    return method or "quantized"


def _compressed(quantization: Mapping[str, Any]) -> str:
    """compressed-tensors (llm-compressor): its format, else its first group's weights."""
    form = str(quantization.get("format") or "")
    if "nvfp4" in form:
        return "nvfp4"
    if "mxfp4" in form:
        return "mxfp4"
    groups = quantization.get("config_groups")
    group: Any = next(iter(groups.values()), {}) if isinstance(groups, dict) and groups else {}
    weights = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(weights, dict):
        return "compressed-tensors"
    bits, kind = weights.get("num_bits"), weights.get("type")
    if kind == "float" and bits == 8:
        return "fp8"
    if kind == "int" and bits == 8:
        return "w8a8" if group.get("input_activations") else "w8a16"
    if kind == "int" and bits == 4:
        return "w4a16"
    return "compressed-tensors"
