"""Fetching by name from a Hub that answers over loopback (`FakeHub`).

What a download does can only be seen with a server: which files are
fetched and in what order, what the Hub's error answers become, and what
a dropped connection leaves behind. Each case runs `resolve_preset` in a
child process whose `HF_ENDPOINT` is the fake Hub (huggingface_hub reads
its settings at import).
"""

import json
import os
import subprocess
import sys
import shutil
import tempfile

from tests.checkpoints.hub_fixtures import FakeHub
from tests.checkpoints.hub_fixtures import copy_tree
from tests.checkpoints.reference_checkpoints import make_huggingface
from tests.test_case import TestCase

_CHILD = """
import json, sys
from keras_bert.checkpoints.preset_names import resolve_preset
for name, load_weights, allow_pickle in json.loads(sys.argv[1]):
    try:
        print(json.dumps({"path": resolve_preset(
            name, load_weights=load_weights, allow_pickle=allow_pickle)}))
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
"""
# Files a BERT repository often carries beside what keras_bert reads.
_EXTRAS = {"pytorch_model.bin": b"pickle", "tf_model.h5": b"h5",
           "onnx/model.onnx": b"onnx", "README.md": b"# a model"}


def _write(directory, files):
    for name, data in files.items():
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return directory


class HubDownloadTest(TestCase):

    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.mkdtemp()
        cls.bert_dir = os.path.join(cls.scratch, "bert")
        make_huggingface("BertModel", cls.bert_dir)
        cls.full_dir = os.path.join(cls.scratch, "full")
        _write(copy_tree(cls.bert_dir, cls.full_dir), _EXTRAS)
        cls.roberta_dir = _write(os.path.join(cls.scratch, "roberta"), {
            "config.json": json.dumps({"model_type": "roberta"}).encode(),
            "model.safetensors": b"weights"})
        cls.pickled_dir = _write(copy_tree(
            cls.bert_dir, os.path.join(cls.scratch, "pickled"),
            skip=("model.safetensors",)), {"pytorch_model.bin": b"pickle"})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def resolve(self, hub_url, cache, *requests):
        """`resolve_preset` answers ({"path"} or {"error"}) in a child."""
        env = {**os.environ, "HF_ENDPOINT": hub_url, "HF_HUB_OFFLINE": "0",
               "HF_HUB_CACHE": cache, "HF_HUB_DISABLE_XET": "1",
               "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_TOKEN": ""}
        requests = [r if isinstance(r, (list, tuple)) else (r, True, False)
                    for r in requests]
        result = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(requests)], env=env,
            capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        return [json.loads(line) for line in result.stdout.splitlines()]

    def test_fetches_only_what_a_bert_needs_config_first(self):
        cache = tempfile.mkdtemp(dir=self.get_temp_dir())
        with FakeHub() as hub:
            hub.add("org/full", self.full_dir)
            [small] = self.resolve(hub.url, cache, ("org/full", False, False))
            self.assertNotIn("model.safetensors", hub.downloaded())
            [full] = self.resolve(hub.url, cache, "org/full")
            fetched = hub.downloaded()
        self.assertEqual(small, full)
        self.assertEqual(sorted(fetched), sorted(
            ["config.json", "vocab.txt", "tokenizer_config.json",
             "model.safetensors"]))
        self.assertEqual(fetched[-1], "model.safetensors")
        with open(os.path.join(full["path"], "model.safetensors"), "rb") as f:
            with open(os.path.join(self.bert_dir, "model.safetensors"),
                      "rb") as g:
                self.assertEqual(f.read(), g.read())

    def test_hub_answers_become_clear_errors(self):
        cache = tempfile.mkdtemp(dir=self.get_temp_dir())
        with FakeHub() as hub:
            hub.add("org/full", self.bert_dir)
            hub.add("FacebookAI/roberta", self.roberta_dir)
            hub.add("org/pickled", self.pickled_dir)
            hub.gated.add("org/gated")
            answers = self.resolve(
                hub.url, cache, "org/gated", "org/missing", "org/full@v9",
                "FacebookAI/roberta", "org/pickled")
            fetched = hub.downloaded()
        gated, missing, revision, roberta, pickled = [
            answer.get("error", "") for answer in answers]
        self.assertIn("is gated", gated)
        self.assertIn("HF_TOKEN", gated)
        self.assertIn("does not exist on the Hub", missing)
        self.assertIn("no revision 'v9'", revision)
        self.assertIn("model_type 'roberta'", roberta)
        self.assertIn("allow_pickle=True", pickled)
        # Neither the RoBERTa's weights nor the pickle were fetched.
        self.assertNotIn("model.safetensors", fetched)
        self.assertNotIn("pytorch_model.bin", fetched)

    def test_dropped_download_resumes_and_never_loads_a_partial_file(self):
        cache = tempfile.mkdtemp(dir=self.get_temp_dir())
        with FakeHub() as hub:
            hub.add("org/cut", self.bert_dir)
            # Every try of this call is cut off halfway.
            hub.cuts["model.safetensors"] = 1000
            [failed] = self.resolve(hub.url, cache, "org/cut")
            hub.cuts.clear()
            [done] = self.resolve(hub.url, cache, "org/cut")
        self.assertIn("download failed", failed["error"])
        self.assertIn("Run again to resume", failed["error"])
        with open(os.path.join(done["path"], "model.safetensors"), "rb") as f:
            with open(os.path.join(self.bert_dir, "model.safetensors"),
                      "rb") as g:
                self.assertEqual(f.read(), g.read())

    def test_unreachable_hub_falls_back_to_the_cache(self):
        cache = tempfile.mkdtemp(dir=self.get_temp_dir())
        with FakeHub() as hub:
            hub.add("org/full", self.bert_dir)
            [online] = self.resolve(hub.url, cache, "org/full")
        # Nothing listens on port 9 (discard) of the loopback.
        cached, other = self.resolve("http://127.0.0.1:9", cache,
                                     "org/full", "org/other")
        self.assertEqual(cached, online)
        self.assertIn("could not be reached", other["error"])
        self.assertIn(cache, other["error"])
