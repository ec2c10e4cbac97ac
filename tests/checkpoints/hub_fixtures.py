"""Hugging Face Hub stand-ins for tests: a cache in the Hub's own layout,
and a loopback server that answers as the Hub does.

`add_to_cache` writes a repository into a cache directory exactly as
`huggingface_hub` leaves it after a download (`models--ORG--NAME/blobs/`,
`snapshots/<commit>/` links into the blobs, `refs/main`), so keras_bert,
transformers and sentence-transformers read the same files offline.

`add_to_kaggle_cache` does the same for kagglehub's cache (keras-hub
presets).

`FakeHub` serves repositories over HTTP on 127.0.0.1 with the endpoints a
download uses (`/api/models/...` for the commit and file list,
`/ORG/NAME/resolve/<commit>/<file>` for the files) and the Hub's error
codes (`X-Error-Code: RepoNotFound`, `GatedRepo`, `RevisionNotFound`), and
can cut a file off halfway, as a dropped connection does. Point
`HF_ENDPOINT` at `hub.url` in a child process (huggingface_hub reads its
settings at import).
"""

import hashlib
import http.server
import json
import os
import shutil
import threading
import urllib.parse

from tests.checkpoints.reference_checkpoints import MINILM_DIR
from tests.checkpoints.reference_checkpoints import make_huggingface

SST2_LABELS = ["negative", "positive"]
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _sha1(data):
    return hashlib.sha1(data).hexdigest()


def repo_files(source_dir):
    """{relative path: bytes} of every file under `source_dir`."""
    found = {}
    for root, _, names in os.walk(source_dir):
        for name in names:
            full = os.path.join(root, name)
            relative = os.path.relpath(full, source_dir).replace(os.sep, "/")
            with open(full, "rb") as f:
                found[relative] = f.read()
    return found


def commit_of(files):
    """A 40-hex commit id that changes with the files' contents."""
    digest = hashlib.sha1()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name])
    return digest.hexdigest()


def add_to_cache(cache_dir, repo_id, source_dir, revision="main"):
    """Writes `source_dir` into `cache_dir` as repository `repo_id` at
    `revision`, in the Hub's cache layout. Returns the snapshot directory."""
    files = repo_files(source_dir)
    commit = commit_of(files)
    repo = os.path.join(cache_dir, "models--" + repo_id.replace("/", "--"))
    snapshot = os.path.join(repo, "snapshots", commit)
    for name, data in files.items():
        blob = os.path.join(repo, "blobs", hashlib.sha256(data).hexdigest())
        os.makedirs(os.path.dirname(blob), exist_ok=True)
        if not os.path.exists(blob):
            with open(blob, "wb") as f:
                f.write(data)
        link = os.path.join(snapshot, name)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(blob, os.path.dirname(link)), link)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    with open(os.path.join(repo, "refs", revision), "w") as f:
        f.write(commit)
    return snapshot


def _id2label(names):
    return {"id2label": dict(enumerate(names)),
            "label2id": {name: i for i, name in enumerate(names)}}


def write_task_checkpoints(scratch):
    """A Hub-layout cache in `scratch`/hub holding the real
    all-MiniLM-L6-v2 and tiny random checkpoints of each head type:
    `org/tiny-sst2` (2 labels, `SST2_LABELS`), `org/tiny-ner`
    (`NER_LABELS`), `org/tiny-squad`, `cross-encoder/tiny-ms-marco` (one
    label) and `google-bert/bert-base-uncased` (a tiny
    `BertForPreTraining`). Returns (cache directory, MiniLM's commit)."""
    cache = os.path.join(scratch, "hub")
    commit = os.path.basename(add_to_cache(
        cache, "sentence-transformers/all-MiniLM-L6-v2", MINILM_DIR))
    heads = {
        "org/tiny-sst2": ("BertForSequenceClassification",
                          _id2label(SST2_LABELS)),
        "org/tiny-ner": ("BertForTokenClassification",
                         _id2label(NER_LABELS)),
        "org/tiny-squad": ("BertForQuestionAnswering", {}),
        "cross-encoder/tiny-ms-marco": ("BertForSequenceClassification",
                                        {"num_labels": 1}),
        "google-bert/bert-base-uncased": ("BertForPreTraining", {}),
    }
    for seed, (repo_id, (model_class, config)) in enumerate(heads.items()):
        source = os.path.join(scratch, repo_id.replace("/", "--"))
        make_huggingface(model_class, source, seed=seed, **config)
        add_to_cache(cache, repo_id, source)
    return cache, commit


class FakeHub:
    """A loopback Hub: `add(repo_id, source_dir)`, then `url` as
    `HF_ENDPOINT`. `gated` holds ids answered as gated; `cuts` maps a file
    name to how many of its next downloads stop halfway; `requests`
    records every path asked for."""

    def __init__(self):
        self.repos = {}
        self.gated = set()
        self.cuts = {}
        self.requests = []
        self._server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._server.shutdown()
        self._server.server_close()

    def add(self, repo_id, source_dir):
        files = repo_files(source_dir)
        self.repos[repo_id] = (commit_of(files), files)
        return self.repos[repo_id][0]

    def downloaded(self):
        """The file names fetched (GET on resolve/), in order."""
        return [path.split("/resolve/", 1)[1].split("/", 1)[1]
                for method, path in self.requests
                if method == "GET" and "/resolve/" in path]

    def _handler(hub):
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(send_body=False)

            def do_GET(self):
                self._answer(send_body=True)

            def _error(self, status, code):
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("Content-Type", "application/json")
                body = json.dumps({"error": code}).encode()
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, value):
                body = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _repo(self, repo_id, revision):
                """(commit, files) or None after answering an error."""
                if repo_id in hub.gated:
                    self._error(403, "GatedRepo")
                    return None
                if repo_id not in hub.repos:
                    self._error(404, "RepoNotFound")
                    return None
                commit, files = hub.repos[repo_id]
                if revision not in (None, "main", commit):
                    self._error(404, "RevisionNotFound")
                    return None
                return commit, files

            def _answer(self, send_body):
                path = urllib.parse.unquote(
                    urllib.parse.urlparse(self.path).path)
                hub.requests.append((self.command, path))
                parts = path.strip("/").split("/")
                if parts[:2] == ["api", "models"]:
                    self._api(parts[2:])
                elif len(parts) > 4 and parts[2] == "resolve":
                    self._file("/".join(parts[:2]), parts[3],
                               "/".join(parts[4:]), send_body)
                else:
                    self._error(404, "EntryNotFound")

            def _api(self, parts):
                repo_id, rest = "/".join(parts[:2]), parts[2:]
                if rest[:1] == ["tree"]:
                    found = self._repo(repo_id, rest[1])
                    if found:
                        self._json([{"type": "file", "path": name,
                                     "size": len(data), "oid": _sha1(data)}
                                    for name, data in sorted(
                                        found[1].items())])
                    return
                revision = rest[1] if rest[:1] == ["revision"] else None
                found = self._repo(repo_id, revision)
                if found:
                    self._json({"id": repo_id, "modelId": repo_id,
                                "sha": found[0], "private": False,
                                "siblings": [{"rfilename": name}
                                             for name in sorted(found[1])]})

            def _file(self, repo_id, revision, name, send_body):
                found = self._repo(repo_id, revision)
                if not found:
                    return
                commit, files = found
                if name not in files:
                    self._error(404, "EntryNotFound")
                    return
                data, etag = files[name], f'"{_sha1(files[name])}"'
                start = 0
                requested = self.headers.get("Range", "")
                if requested.startswith("bytes="):
                    # A resumed download: the rest of the file.
                    start = int(requested[6:].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range",
                                     f"bytes {start}-{len(data) - 1}/"
                                     f"{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("X-Repo-Commit", commit)
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                data = data[start:]
                if not send_body:
                    return
                if hub.cuts.get(name):
                    hub.cuts[name] -= 1
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data)

        return Handler


def add_to_kaggle_cache(cache_dir, handle, source_dir):
    """Writes `source_dir` into kagglehub's cache (`KAGGLEHUB_CACHE`) as
    model `handle` (OWNER/MODEL/FRAMEWORK/VARIATION/VERSION), with the
    completion marker kagglehub writes after a download."""
    owner, model, framework, variation, version = handle.split("/")
    base = os.path.join(cache_dir, "models", owner, model, framework,
                        variation)
    shutil.copytree(source_dir, os.path.join(base, version))
    with open(os.path.join(base, f"{version}.complete"), "w"):
        pass
    return os.path.join(base, version)


def copy_tree(source_dir, target_dir, skip=()):
    """A copy of `source_dir` without the files named in `skip`."""
    shutil.copytree(source_dir, target_dir,
                    ignore=lambda _, names: [n for n in names if n in skip])
    return target_dir
