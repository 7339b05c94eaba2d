"""A fake Hugging Face Hub on 127.0.0.1, so no test reaches the internet.

It answers the few endpoints huggingface_hub calls to import a model: the model's info
with its file list (`GET /api/models/<repo>/revision/<rev>?blobs=True`) and a file
(`HEAD`/`GET /<repo>/resolve/<rev>/<path>`, with the X-Repo-Commit, ETag and
Content-Length headers the library reads), and the Hub's refusals: 404 or 401 with
X-Error-Code RepoNotFound, RevisionNotFound or EntryNotFound, and 403 GatedRepo for a
gated repository's files. Every request is recorded, so a test can tell whether an import
called the Hub again.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class FakeRepo:
    """files: path -> its bytes (served) or a size (listed only, like an LFS weights file).
    gated: model info answers, every file is refused with GatedRepo (no access granted).
    private: a private repository the portal's token can read (a missing repository is
    one not in FakeHub.repos)."""

    files: dict[str, bytes | int]
    sha: str = COMMIT
    gated: bool = False
    private: bool = False
    revisions: tuple[str, ...] = ("main",)


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    endpoint: str = ""
    # Each hub answers under a path of its own, so a cached answer of an earlier hub on a
    # reused port is never read for this one (the cache key holds the endpoint).
    prefix: str = field(default_factory=lambda: f"/hub-{uuid.uuid4().hex[:12]}")

    def api_calls(self) -> list[str]:
        return [path for method, path in self.requests if path.startswith("/api/")]


API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/]+))?$")
RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")


class _HubHandler(BaseHTTPRequestHandler):
    """The fake Hub's answers; `hub` is set on the subclass that _handler makes per hub."""

    hub: FakeHub

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: pytest shows the assertion, not the access log

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _refuse(self, status: int, code: str, message: str = "") -> None:
        payload = json.dumps({"error": message or code}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        if message:
            self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(payload)

    def _send(self, payload: bytes, headers: dict[str, str], body: bool) -> None:
        self.send_response(200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def _repo(self, repo_id: str, revision: str | None) -> FakeRepo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            # The real Hub answers 401 to an anonymous caller, as for a private repo.
            self._refuse(401, "RepoNotFound", "Repository not found")
            return None
        if revision is not None and revision not in (*repo.revisions, repo.sha):
            self._refuse(404, "RevisionNotFound", "Invalid rev id")
            return None
        return repo

    def _answer(self, *, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        if not path.startswith(self.hub.prefix + "/"):
            self._refuse(404, "NotFound")
            return
        path = path.removeprefix(self.hub.prefix)
        self.hub.requests.append((self.command, path))
        if match := API.match(path):
            repo = self._repo(match["repo"], match["rev"])
            if repo is not None:
                self._send(_model_info(match["repo"], repo), _JSON, body)
            return
        if match := RESOLVE.match(path):
            self._resolve(match, body)
            return
        self._refuse(404, "NotFound")

    def _resolve(self, match: re.Match[str], body: bool) -> None:
        """A file of the repository at a revision, or the Hub's refusal."""
        repo = self._repo(match["repo"], match["rev"])
        if repo is None:
            return
        if repo.gated:
            self._refuse(403, "GatedRepo", "Access to model is restricted.")
            return
        content = repo.files.get(match["path"])
        if not isinstance(content, bytes):
            self._refuse(404, "EntryNotFound", "Entry not found")
            return
        etag = hashlib.sha1(content).hexdigest()  # as git's blob id
        headers = {"X-Repo-Commit": repo.sha, "ETag": f'"{etag}"'}
        self._send(content, headers, body)


def _model_info(repo_id: str, repo: FakeRepo) -> bytes:
    """The model info huggingface_hub reads: the commit, access and the file list (an
    `lfs` entry for a file listed only by its size)."""
    siblings = []
    for path, content in sorted(repo.files.items()):
        size = len(content) if isinstance(content, bytes) else content
        sibling: dict[str, object] = {"rfilename": path, "size": size, "blobId": "0" * 40}
        if isinstance(content, int):
            sibling["lfs"] = {"size": size, "sha256": "0" * 64, "pointerSize": 134}
        siblings.append(sibling)
    info = {
        "_id": "fake",
        "id": repo_id,
        "modelId": repo_id,
        "sha": repo.sha,
        "private": repo.private,
        "gated": "manual" if repo.gated else False,
        "disabled": False,
        "siblings": siblings,
    }
    return json.dumps(info).encode()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    """A handler class that answers for `hub` (the server makes one handler per request)."""
    return type("Handler", (_HubHandler,), {"hub": hub})


_JSON = {"Content-Type": "application/json"}


@contextmanager
def running(hub: FakeHub) -> Iterator[FakeHub]:
    """Serve `hub` on a free port of 127.0.0.1 for the duration of the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    hub.endpoint = f"http://127.0.0.1:{server.server_address[1]}{hub.prefix}"
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
