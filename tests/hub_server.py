"""A small Hub-API-compatible HTTP server for tests, on 127.0.0.1.

It speaks the part of the Hugging Face Hub API that `huggingface_hub` 2.x (and through it `transformers`) uses to
create repos, upload (regular files inline in the NDJSON commit, LFS files through the batch/upload/verify
exchange), list, and download with revisions. The clients under test are the real, unpatched libraries; they are
pointed here with `HF_ENDPOINT` (read at import time, so set it in the environment of a subprocess).

Implemented (model repos; dataset repos answer the same routes under /api/datasets/... and /datasets/...):
    POST /api/repos/create                         create (visibility/private, exist_ok via 409)
    GET  /api/whoami-v2                            the token's user
    GET  /api/models/{repo}[/revision/{rev}]       model_info (sha, siblings, private)
    GET  /api/models/{repo}/tree/{rev}[/{path}]    list_repo_tree / list_repo_files
    GET  /api/models/{repo}/refs                   branches
    POST /api/models/{repo}/branch/{branch}        create_branch
    POST /api/models/{repo}/preupload/{rev}        regular vs lfs per file
    POST /api/models/{repo}/commit/{rev}           NDJSON commit: header, file (base64), lfsFile, deletedFile
    POST /{repo}.git/info/lfs/objects/batch        LFS batch (basic transfer)
    PUT  /_lfs/{repo}/{oid}                        LFS upload, no token (like a presigned URL), announced oids only
    POST /_lfs/{repo}/{oid}/verify                 LFS verify (size + sha256)
    HEAD/GET /{repo}/resolve/{rev}/{path}          download, with ETag / X-Linked-Etag / X-Repo-Commit
    POST /api/validate-yaml                        card metadata checks (a subset of the Hub's rules)

Faults a test injects (`HubState`): downloads cut halfway (`truncate_downloads`) or corrupted at the right length
(`corrupt_downloads`), every LFS upload cut halfway (`cut_uploads`), and commits answered 500 (`failing_commits`).

Errors as the Hub sends them: 404 + `X-Error-Code: RepoNotFound | RevisionNotFound | EntryNotFound`, 401 +
`RepoNotFound` for a private repo without a valid token, 401 for writes without a token, 403 for writes to
another user's namespace, 409 for an existing repo.

Not implemented (gaps against the real Hub): Xet storage (tests set HF_HUB_DISABLE_XET=1), LFS multipart,
redirects of LFS downloads to a CDN (files are served directly, with the same headers), pull requests, Spaces,
gated repos, organisations, commit history listing, rate limits, and the Hub's full YAML schema.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlparse

import yaml

# The test users' tokens: `hub` (tests/conftest.py) serves alice and bob.
ALICE, BOB = "hf_alice_test_token", "hf_bob_test_token"

LFS_SIZE_THRESHOLD = 10 * 1024 * 1024  # the real Hub stores files of 10 MB and more in LFS
LFS_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".h5",
    ".msgpack",
    ".onnx",
    ".pkl",
    ".zip",
    ".tar.gz",
    ".parquet",
    ".arrow",
)
KNOWN_LICENSES = {"apache-2.0", "mit", "bsd-3-clause", "cc-by-4.0", "cc-by-sa-4.0", "cc-by-nc-4.0", "gpl-3.0", "other"}
PIPELINE_TAGS = {
    "text-classification", "token-classification", "translation", "text2text-generation", "text-generation",
    "feature-extraction", "fill-mask", "zero-shot-classification", "sentence-similarity", "summarization",
}  # fmt: skip


def git_blob_oid(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class StoredFile:
    """A file in a commit: regular content inline, or a pointer to an LFS object."""

    size: int
    content: bytes | None = None  # regular files
    lfs_oid: str | None = None  # sha256 of LFS files

    @property
    def oid(self) -> str:
        return git_blob_oid(self.content) if self.content is not None else self.lfs_oid


@dataclass
class Commit:
    sha: str
    files: dict[str, StoredFile]
    message: str
    parent: str | None


@dataclass
class Repo:
    repo_id: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> Commit | None:
        sha = self.branches.get(revision, revision)
        return self.commits.get(sha)


@dataclass
class HubState:
    """Everything the server holds, inspectable by tests (e.g. which files travelled through LFS)."""

    tokens: dict[str, str] = field(default_factory=dict)  # token -> user name
    repos: dict[str, Repo] = field(default_factory=dict)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)
    lfs_pending: set[tuple[str, str]] = field(default_factory=set)  # (repo_id, oid) announced by a batch call
    lfs_uploads: list[tuple[str, str, int]] = field(default_factory=list)  # (repo_id, oid, size) per verified upload
    commits_received: list[tuple[str, str, list[str], list[str]]] = field(
        default_factory=list
    )  # repo, sha, regular, lfs
    truncate_downloads: set[str] = field(default_factory=set)  # paths served with half their bytes, then cut
    corrupt_downloads: set[str] = field(default_factory=set)  # paths served with flipped bytes (same size)
    cut_uploads: bool = False  # every LFS upload read halfway, then the connection closed without an answer
    failing_commits: int = 0  # this many commits answered 500 (nothing committed), then commits succeed
    requests: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class HubError(Exception):
    def __init__(self, status: int, message: str, error_code: str | None = None, extra: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.error_code, self.extra = status, message, error_code, extra or {}


REPO = r"(?P<repo>[\w.-]+/[\w.-]+)"
ROUTES: list[tuple[str, re.Pattern]] = [
    ("create_repo", re.compile(r"^/api/repos/create$")),
    ("whoami", re.compile(r"^/api/whoami-v2$")),
    ("validate_yaml", re.compile(r"^/api/validate-yaml$")),
    ("model_info", re.compile(rf"^/api/models/{REPO}(?:/revision/(?P<rev>[^/]+))?$")),
    ("tree", re.compile(rf"^/api/models/{REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$")),
    ("refs", re.compile(rf"^/api/models/{REPO}/refs$")),
    ("branch", re.compile(rf"^/api/models/{REPO}/branch/(?P<branch>[^/]+)$")),
    ("preupload", re.compile(rf"^/api/models/{REPO}/preupload/(?P<rev>[^/]+)$")),
    ("commit", re.compile(rf"^/api/models/{REPO}/commit/(?P<rev>[^/]+)$")),
    ("lfs_batch", re.compile(rf"^/{REPO}\.git/info/lfs/objects/batch$")),
    ("lfs_verify", re.compile(rf"^/_lfs/{REPO}/(?P<oid>[0-9a-f]{{64}})/verify$")),
    ("lfs_upload", re.compile(rf"^/_lfs/{REPO}/(?P<oid>[0-9a-f]{{64}})$")),
    ("resolve", re.compile(rf"^/{REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")),
]


class HubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HubServer

    def log_message(self, format: str, *args) -> None:  # keep pytest output clean
        pass

    # --- plumbing -------------------------------------------------------------------------------------------------

    @property
    def state(self) -> HubState:
        return self.server.state

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _user(self) -> str | None:
        header = self.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else None
        if token is None:
            return None
        if token not in self.state.tokens:
            raise HubError(401, "Invalid credentials in Authorization header")
        return self.state.tokens[token]

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False):
        self.send_response(status)
        headers = {"Content-Type": "application/json", **(headers or {})}
        headers.setdefault("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def _json(self, status: int, payload, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), headers)

    def _dispatch(self, method: str) -> None:
        parsed = urlparse(self.path)
        path = unquote(parsed.path)
        with self.state.lock:
            self.state.requests.append((method, path))
        # Dataset repos speak the model routes under /api/datasets/... and /datasets/...; they are stored apart.
        self.kind = "model"
        if path.startswith("/api/datasets/"):
            self.kind, path = "dataset", "/api/models/" + path.removeprefix("/api/datasets/")
        elif path.startswith("/datasets/"):
            self.kind, path = "dataset", path.removeprefix("/datasets")
        try:
            for name, pattern in ROUTES:
                match = pattern.match(path)
                if match:
                    handler = getattr(self, f"{method.lower()}_{name}", None)
                    if handler is None:
                        raise HubError(405, f"{method} not allowed on {name}")
                    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
                    return handler(query=query, **{k: v for k, v in match.groupdict().items() if v is not None})
            raise HubError(404, f"no route for {method} {path}")
        except HubError as error:
            headers = {"X-Error-Message": error.message}
            if error.error_code:
                headers["X-Error-Code"] = error.error_code
            body = json.dumps({"error": error.message, **error.extra}).encode()
            self._send(error.status, body, headers, head=method == "HEAD")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    # --- access ---------------------------------------------------------------------------------------------------

    def _key(self, repo: str) -> str:
        """Where a repo is stored: its id for a model, `datasets/ID` for a dataset."""
        return repo if self.kind == "model" else f"datasets/{repo}"

    def _url(self, repo: str) -> str:
        return f"{self.server.endpoint}/{self._key(repo)}"

    def _readable_repo(self, repo: str) -> Repo:
        user = self._user()
        found = self.state.repos.get(self._key(repo))
        if found is None:
            raise HubError(404, "Repository not found", "RepoNotFound")
        if found.private and user != repo.split("/")[0]:
            raise HubError(401, "Repository not found", "RepoNotFound")
        return found

    def _writable_repo(self, repo: str) -> Repo:
        user = self._user()
        if user is None:
            raise HubError(401, "You must be authenticated to write")
        found = self._readable_repo(repo)
        if repo.split("/")[0] != user:
            raise HubError(403, f"You don't have the rights to write to {repo}")
        return found

    def _commit(self, repo: Repo, revision: str) -> Commit:
        commit = repo.resolve(revision)
        if commit is None:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return commit

    # --- endpoints ------------------------------------------------------------------------------------------------

    def post_create_repo(self, query: dict) -> None:
        user = self._user()
        if user is None:
            raise HubError(401, "You must be authenticated to create a repo")
        body = json.loads(self._read_body() or b"{}")
        namespace = body.get("organization") or user
        if namespace != user:
            raise HubError(403, f"You cannot create a repo in {namespace}")
        repo_id = f"{namespace}/{body['name']}"
        if body.get("type", "model") not in ("model", "dataset"):
            raise HubError(400, "only model and dataset repos are supported by the test server")
        self.kind = body.get("type", "model")
        with self.state.lock:
            if self._key(repo_id) in self.state.repos:
                raise HubError(409, f"You already created this {self.kind} repo", extra={"url": self._url(repo_id)})
            # huggingface_hub 2.x sends `visibility`; older clients send `private`.
            repo = Repo(repo_id, private=body.get("visibility") == "private" or bool(body.get("private")))
            initial = Commit(
                hashlib.sha1(f"init {repo_id} {time.time_ns()}".encode()).hexdigest(), {}, "initial commit", None
            )
            gitattributes = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
            initial.files[".gitattributes"] = StoredFile(len(gitattributes), content=gitattributes)
            repo.commits[initial.sha], repo.branches["main"] = initial, initial.sha
            self.state.repos[self._key(repo_id)] = repo
        self._json(200, {"url": self._url(repo_id), "name": repo_id, "id": repo_id})

    def get_whoami(self, query: dict) -> None:
        user = self._user()
        if user is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        self._json(200, {"type": "user", "name": user, "orgs": [], "auth": {"type": "access_token"}})

    def post_validate_yaml(self, query: dict) -> None:
        body = json.loads(self._read_body() or b"{}")
        errors = validate_card_metadata(body.get("content", ""))
        if errors:
            self._json(400, {"error": "; ".join(errors)}, {"X-Error-Message": "; ".join(errors)})
        else:
            self._json(200, {"errors": [], "warnings": []})

    def _siblings(self, commit: Commit) -> list[dict]:
        siblings = []
        for path, stored in sorted(commit.files.items()):
            entry = {"rfilename": path, "size": stored.size, "blobId": stored.oid}
            if stored.lfs_oid:
                entry["lfs"] = {"sha256": stored.lfs_oid, "size": stored.size, "pointerSize": 134}
            siblings.append(entry)
        return siblings

    def get_model_info(self, query: dict, repo: str, rev: str = "main") -> None:
        found = self._readable_repo(repo)
        commit = self._commit(found, rev)
        self._json(
            200,
            {"id": repo, "modelId": repo, "author": repo.split("/")[0], "sha": commit.sha, "private": found.private,
             "disabled": False, "gated": False, "tags": [], "siblings": self._siblings(commit),
             "lastModified": "2026-01-01T00:00:00.000Z"},
        )  # fmt: skip

    def get_tree(self, query: dict, repo: str, rev: str, path: str = "") -> None:
        commit = self._commit(self._readable_repo(repo), rev)
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        recursive = query.get("recursive", "false").lower() in ("1", "true")
        entries, folders = [], set()
        for file_path, stored in sorted(commit.files.items()):
            if not file_path.startswith(prefix):
                continue
            rest = file_path[len(prefix) :]
            if "/" in rest and not recursive:
                folders.add(prefix + rest.split("/")[0])
                continue
            entry = {"type": "file", "oid": stored.oid, "size": stored.size, "path": file_path}
            if stored.lfs_oid:
                entry["lfs"] = {"oid": stored.lfs_oid, "size": stored.size, "pointerSize": 134}
            entries.append(entry)
        entries += [
            {"type": "directory", "oid": git_blob_oid(f.encode()), "size": 0, "path": f} for f in sorted(folders)
        ]
        if prefix and not entries:
            raise HubError(404, f"{path} does not exist on {rev}", "EntryNotFound")
        self._json(200, entries)

    def get_refs(self, query: dict, repo: str) -> None:
        found = self._readable_repo(repo)
        branches = [
            {"name": name, "ref": f"refs/heads/{name}", "targetCommit": sha} for name, sha in found.branches.items()
        ]
        self._json(200, {"branches": branches, "converts": [], "tags": []})

    def post_branch(self, query: dict, repo: str, branch: str) -> None:
        found = self._writable_repo(repo)
        body = json.loads(self._read_body() or b"{}")
        with self.state.lock:
            if branch in found.branches:
                raise HubError(409, f"Reference already exists: refs/heads/{branch}")
            found.branches[branch] = self._commit(found, body.get("startingPoint") or "main").sha
        self._json(200, {})

    def post_preupload(self, query: dict, repo: str, rev: str) -> None:
        found = self._writable_repo(repo)
        commit = found.resolve(rev)
        body = json.loads(self._read_body())
        files = []
        for item in body["files"]:
            lfs = item["size"] >= LFS_SIZE_THRESHOLD or item["path"].endswith(LFS_SUFFIXES)
            existing = commit.files.get(item["path"]) if commit else None
            files.append(
                {"path": item["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False,
                 "oid": existing.oid if existing else None}
            )  # fmt: skip
        self._json(200, {"files": files, "commitOid": commit.sha if commit else None})

    def post_commit(self, query: dict, repo: str, rev: str) -> None:
        found = self._writable_repo(repo)
        body = self._read_body()
        with self.state.lock:
            failing = self.state.failing_commits > 0
            self.state.failing_commits -= failing
        if failing:
            raise HubError(500, "Internal Error - We're working hard to fix this as soon as possible!")
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "the commit payload must start with a header line")
        header = lines[0]["value"]
        with self.state.lock:
            parent = self._commit(found, rev)
            if header.get("parentCommit") and header["parentCommit"] != parent.sha:
                raise HubError(412, "A commit has happened since. Please refresh and try again.")
            files = dict(parent.files)
            regular, lfs = [], []
            for line in lines[1:]:
                key, value = line["key"], line["value"]
                if key == "file":
                    content = base64.b64decode(value["content"])
                    files[value["path"]] = StoredFile(len(content), content=content)
                    regular.append(value["path"])
                elif key == "lfsFile":
                    stored = self.state.lfs_objects.get(value["oid"])
                    if stored is None or len(stored) != value["size"]:
                        raise HubError(400, f"LFS object {value['oid']} was not uploaded")
                    files[value["path"]] = StoredFile(value["size"], lfs_oid=value["oid"])
                    lfs.append(value["path"])
                elif key == "deletedFile":
                    if files.pop(value["path"], None) is None:
                        raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
                elif key == "deletedFolder":
                    files = {p: f for p, f in files.items() if not p.startswith(value["path"].rstrip("/") + "/")}
                else:
                    raise HubError(400, f"unsupported commit operation {key!r}")
            if "README.md" in regular:
                errors = validate_card_metadata(files["README.md"].content.decode())
                if errors:
                    raise HubError(400, "Invalid metadata in README.md: " + "; ".join(errors))
            sha = hashlib.sha1(f"{parent.sha} {header.get('summary')} {time.time_ns()}".encode()).hexdigest()
            found.commits[sha] = Commit(sha, files, header.get("summary", ""), parent.sha)
            branch = rev if rev in found.branches else "main"
            found.branches[branch] = sha
            self.state.commits_received.append((self._key(repo), sha, regular, lfs))
        self._json(200, {"success": True, "commitOid": sha, "commitUrl": f"{self._url(repo)}/commit/{sha}"})

    def post_lfs_batch(self, query: dict, repo: str) -> None:
        self._writable_repo(repo)
        body = json.loads(self._read_body())
        if body.get("operation") != "upload":
            raise HubError(400, "only uploads are supported")
        objects = []
        for item in body["objects"]:
            oid, size = item["oid"], item["size"]
            entry = {"oid": oid, "size": size, "authenticated": True}
            if oid not in self.state.lfs_objects:  # already stored: no actions, the client skips the upload
                with self.state.lock:
                    self.state.lfs_pending.add((repo, oid))
                href = f"{self.server.endpoint}{'' if self.kind == 'model' else '/datasets'}/_lfs/{repo}/{oid}"
                entry["actions"] = {"upload": {"href": href}, "verify": {"href": f"{href}/verify"}}
            objects.append(entry)
        self._json(200, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"})

    def put_lfs_upload(self, query: dict, repo: str, oid: str) -> None:
        # Like the Hub's presigned storage URLs: no token, but only for objects a batch call announced.
        if (repo, oid) not in self.state.lfs_pending:
            raise HubError(403, "upload URL not issued by the LFS batch endpoint")
        if self.state.cut_uploads:  # read half the body, then hang up without an answer
            self.rfile.read(int(self.headers.get("Content-Length") or 0) // 2)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        content = self._read_body()
        if hashlib.sha256(content).hexdigest() != oid:
            raise HubError(400, "uploaded content does not match its oid")
        with self.state.lock:
            self.state.lfs_objects[oid] = content
            self.state.lfs_pending.discard((repo, oid))
        self._send(200)

    def post_lfs_verify(self, query: dict, repo: str, oid: str) -> None:
        self._writable_repo(repo)
        body = json.loads(self._read_body())
        stored = self.state.lfs_objects.get(oid)
        if stored is None or len(stored) != body.get("size") or body.get("oid") != oid:
            raise HubError(404, f"LFS object {oid} not found", "EntryNotFound")
        with self.state.lock:
            self.state.lfs_uploads.append((repo, oid, len(stored)))
        self._json(200, {"message": "Object verified"})

    def _resolve(self, repo: str, rev: str, path: str, head: bool) -> None:
        found = self._readable_repo(repo)
        commit = self._commit(found, rev)
        stored = commit.files.get(path)
        if stored is None:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        content = stored.content if stored.content is not None else self.state.lfs_objects[stored.lfs_oid]
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(len(content)),
            "ETag": f'"{stored.oid}"',
            "X-Repo-Commit": commit.sha,
            "Accept-Ranges": "bytes",
        }
        if stored.lfs_oid:
            headers.update({"X-Linked-Etag": f'"{stored.lfs_oid}"', "X-Linked-Size": str(stored.size)})
        if path in self.state.corrupt_downloads:
            content = bytes(byte ^ 0xFF for byte in content[:64]) + content[64:]
        if head:
            return self._send(200, b"", {**headers}, head=True)
        if path in self.state.truncate_downloads:  # promise everything, send half, hang up
            self.send_response(200)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(content[: len(content) // 2])
            self.wfile.flush()
            self.close_connection = True
            return None
        self._send(200, content, headers)

    def get_resolve(self, query: dict, repo: str, rev: str, path: str) -> None:
        self._resolve(repo, rev, path, head=False)

    def head_resolve(self, query: dict, repo: str, rev: str, path: str) -> None:
        self._resolve(repo, rev, path, head=True)


def validate_card_metadata(content: str) -> list[str]:
    """A subset of the Hub's README metadata rules: front matter is YAML; license, pipeline_tag, tags and
    model-index have the Hub's shapes."""
    if not content.startswith("---"):
        return []
    try:
        metadata = yaml.safe_load(content.split("---", 2)[1]) or {}
    except (yaml.YAMLError, IndexError) as error:
        return [f"invalid YAML: {error}"]
    if not isinstance(metadata, dict):
        return ["metadata must be a mapping"]
    errors = []
    if "license" in metadata and metadata["license"] not in KNOWN_LICENSES:
        errors.append(f"unknown license {metadata['license']!r}")
    if "pipeline_tag" in metadata and metadata["pipeline_tag"] not in PIPELINE_TAGS:
        errors.append(f"unknown pipeline_tag {metadata['pipeline_tag']!r}")
    for key in ("tags", "datasets"):
        if key in metadata and not (
            isinstance(metadata[key], list) and all(isinstance(t, str) for t in metadata[key])
        ):
            errors.append(f"{key} must be a list of strings")
    for model in metadata.get("model-index", []) or []:
        if not isinstance(model, dict) or not isinstance(model.get("name"), str):
            errors.append("model-index entries need a name")
            continue
        for result in model.get("results", []):
            if not isinstance(result.get("task", {}).get("type"), str):
                errors.append("model-index results need task.type")
            dataset = result.get("dataset", {})
            if not (isinstance(dataset.get("name"), str) and isinstance(dataset.get("type"), str)):
                errors.append("model-index results need dataset.name and dataset.type")
            for metric in result.get("metrics", []):
                if not isinstance(metric.get("type"), str) or not isinstance(metric.get("value"), int | float):
                    errors.append("model-index metrics need a type and a numeric value")
    return errors


class HubServer(ThreadingHTTPServer):
    """`with HubServer() as hub:` serves on 127.0.0.1 (a free port) in a daemon thread; `hub.endpoint` is the URL."""

    daemon_threads = True

    def __init__(self, tokens: dict[str, str] | None = None) -> None:
        super().__init__(("127.0.0.1", 0), HubHandler)
        self.state = HubState(tokens=dict(tokens or {}))
        self.endpoint = f"http://127.0.0.1:{self.server_address[1]}"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()

    def url(self, repo_id: str, path: str, revision: str = "main") -> str:
        return f"{self.endpoint}/{repo_id}/resolve/{quote(revision, safe='')}/{path}"
