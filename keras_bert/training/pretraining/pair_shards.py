"""Offline pretraining data: sentence pairs written once as TFRecord shards.

Streaming (`pair_dataset`) tokenizes the text and builds the NSP pairs
while training. For long runs, or several runs over one corpus, the pairs
can be written once with `write_pair_shards` and read back with
`read_pair_shards`; masking stays in `batch_pairs`, so every pass still
gets fresh masks (the original BERT wrote its masks into the files too,
and had to duplicate the data to vary them).

A shard directory holds `pairs-XXXXX-of-YYYYY.tfrecord` files (one
`tf.train.Example` per pair: `token_ids_a`, `token_ids_b`, `is_next`),
the vocabulary the ids refer to (`vocab.txt`, `tokenizer_config.json`)
and `shards.json`, which lists the files and their pair counts, the
sequence length, the NSP setting and whatever `metadata` the writer
passed. The directory is written under a temporary name and renamed into
place, so an interrupted write leaves nothing that looks complete.
"""

import json
import os
import shutil
import zlib

import tensorflow as tf

from keras_bert.checkpoints.saving import atomic_directory

MANIFEST = "shards.json"
_FORMAT = "keras_bert.pair_shards"
_VERSION = 1
_FEATURES = {
    "token_ids_a": tf.io.VarLenFeature(tf.int64),
    "token_ids_b": tf.io.VarLenFeature(tf.int64),
    "is_next": tf.io.FixedLenFeature([], tf.int64),
}


def write_pair_shards(
    pairs,
    directory,
    tokenizer,
    sequence_length,
    next_sentence_prediction=True,
    pairs_per_shard=50_000,
    metadata=None,
    overwrite=False,
):
    """Writes sentence pairs to TFRecord shards with a manifest.

    Args:
        pairs: `(token_ids_a, token_ids_b, is_next)` triples: a finite
            `tf.data.Dataset` (e.g. `pair_dataset(..., repeat=False)`) or
            any iterable of lists/arrays and ints.
        directory: str. The shard directory to create.
        tokenizer: the `BertTokenizer` the ids come from; its vocabulary
            is saved with the shards.
        sequence_length: int. The packed length the pairs were cut for.
        next_sentence_prediction: bool. Whether the pairs are NSP pairs
            (False: single spans with an empty B).
        pairs_per_shard: int. Pairs per file.
        metadata: dict or None. JSON data stored in the manifest (the
            corpus files, seed, ...).
        overwrite: bool. Replace an existing shard directory.

    Returns:
        The manifest dict, as written to `shards.json`.

    Example:
    >>> import tempfile, keras_bert
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    >>> path = os.path.join(tempfile.mkdtemp(), "shards")
    >>> pairs = [([5, 6], [6], 1), ([6], [5, 5], 0)]
    >>> write_pair_shards(pairs, path, tokenizer, 16)["num_pairs"]
    2
    >>> [(a.tolist(), b.tolist(), int(y)) for a, b, y in
    ...  read_pair_shards(path).as_numpy_iterator()]
    [([5, 6], [6], 1), ([6], [5, 5], 0)]
    """
    if pairs_per_shard < 1:
        raise ValueError(f"pairs_per_shard must be >= 1; got {pairs_per_shard}.")
    directory = os.path.abspath(directory)
    _clear_target(directory, overwrite)
    if hasattr(pairs, "as_numpy_iterator"):
        pairs = pairs.as_numpy_iterator()
    with atomic_directory(directory) as staging:
        counts = []
        writer = None
        for a, b, is_next in pairs:
            if writer is None or counts[-1] == pairs_per_shard:
                if writer is not None:
                    writer.close()
                counts.append(0)
                writer = tf.io.TFRecordWriter(
                    os.path.join(staging, _temporary_name(len(counts) - 1)))
            writer.write(_example(a, b, is_next))
            counts[-1] += 1
        if writer is None:
            raise ValueError(
                f"No sentence pairs to write to {directory}: the corpus gave "
                "none. Check that it has documents of two or more sentences."
            )
        writer.close()
        shards = []
        for index, count in enumerate(counts):
            name = f"pairs-{index:05d}-of-{len(counts):05d}.tfrecord"
            os.rename(os.path.join(staging, _temporary_name(index)),
                      os.path.join(staging, name))
            shards.append({"file": name, "pairs": count})
        tokenizer.save_to_preset(staging)
        manifest = {
            "format": _FORMAT,
            "version": _VERSION,
            "num_pairs": sum(counts),
            "shards": shards,
            "vocabulary_size": int(tokenizer.vocabulary_size()),
            "sequence_length": int(sequence_length),
            "next_sentence_prediction": bool(next_sentence_prediction),
            "metadata": dict(metadata or {}),
        }
        # Written last: a directory with a manifest has every shard.
        with open(os.path.join(staging, MANIFEST), "w") as file:
            json.dump(manifest, file, indent=2)
    return manifest


def write_corpus_shards(
    corpus,
    tokenizer,
    directory,
    sequence_length,
    next_sentence_prediction=True,
    passes=1,
    seed=0,
    metadata=None,
    **kwargs,
):
    """Writes the training pairs of a `TextCorpus` to shards.

    Pass `p` is one `pair_dataset(corpus, ..., seed=seed + p,
    repeat=False)` over the training split: new pair boundaries and
    random B segments each pass, which is what NSP needs from a corpus
    that is read many times.

    Args:
        corpus: a `keras_bert.training.TextCorpus`.
        tokenizer: a `keras_bert.BertTokenizer`.
        directory: str. The shard directory to create.
        sequence_length: int.
        next_sentence_prediction: bool.
        passes: int. Passes over the corpus.
        seed: int.
        metadata: dict or None. Stored in the manifest (with `passes`
            and `seed`).
        **kwargs: `write_pair_shards` options (`pairs_per_shard`,
            `overwrite`).

    Returns:
        The manifest dict.
    """
    from keras_bert.training.pretraining.pretraining_data import pair_dataset

    if passes < 1:
        raise ValueError(f"passes must be >= 1; got {passes}.")
    pairs = None
    for p in range(passes):
        one_pass = pair_dataset(corpus, tokenizer, sequence_length, "train",
                                next_sentence_prediction, seed=seed + p,
                                repeat=False)
        pairs = one_pass if pairs is None else pairs.concatenate(one_pass)
    metadata = {**(metadata or {}), "passes": passes, "seed": seed}
    return write_pair_shards(pairs, directory, tokenizer, sequence_length,
                             next_sentence_prediction, metadata=metadata,
                             **kwargs)


def read_pair_shards(
    directory,
    repeat=False,
    shuffle_seed=None,
    sequence_length=None,
    next_sentence_prediction=None,
    tokenizer=None,
):
    """Reads pairs written by `write_pair_shards` as a `tf.data.Dataset`.

    Without `shuffle_seed` the pairs come back in the order they were
    written. With it, each pass reads the files in a new order (seeded by
    `shuffle_seed` and the pass number, so a rerun reads the same stream;
    mix pairs within files with `batch_pairs(shuffle_buffer_size=...)`).
    The optional expectations are checked against the manifest, so shards
    made for another vocabulary or length fail here instead of training
    on wrong ids.

    Args:
        directory: str. A shard directory.
        repeat: bool. Loop over the shards forever.
        shuffle_seed: int or None. Shuffle the file order on every pass.
        sequence_length: int or None. Expected packed length.
        next_sentence_prediction: bool or None. Expected NSP setting.
        tokenizer: a `BertTokenizer` or None. Its vocabulary must be the
            one the shards were written with, token for token.

    Returns:
        A dataset of `(int32 [None], int32 [None], int32 [])`, the same
        elements as `pair_dataset`.
    """
    manifest = shard_manifest(directory)
    expected = {"sequence_length": sequence_length,
                "next_sentence_prediction": next_sentence_prediction}
    for key, value in expected.items():
        if value is not None and manifest[key] != value:
            raise ValueError(
                f"The shards in {directory} were written with {key}="
                f"{manifest[key]!r} but this run uses {value!r}. Write new "
                "shards for these settings, or use the shards' settings."
            )
    if tokenizer is not None:
        _check_vocabulary(directory, tokenizer)
    paths = [os.path.join(directory, shard["file"])
             for shard in manifest["shards"]]
    for path in paths:
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"Shard {path} listed in {MANIFEST} is missing. Write the "
                "shards again."
            )

    def file_order():
        epoch = 0
        while True:
            order = list(paths)
            if shuffle_seed is not None:
                seed = zlib.crc32(f"{shuffle_seed}/{epoch}".encode())
                # A seeded shuffle that does not depend on Python's hash.
                order.sort(key=lambda p: zlib.crc32(
                    f"{seed}/{os.path.basename(p)}".encode()))
            yield from order
            if not repeat:
                return
            epoch += 1

    files = tf.data.Dataset.from_generator(
        file_order, output_signature=tf.TensorSpec([], tf.string))
    records = files.flat_map(tf.data.TFRecordDataset)
    return records.map(_parse, num_parallel_calls=tf.data.AUTOTUNE)


def shard_manifest(directory):
    """The manifest (`shards.json`) of a shard directory, checked."""
    path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{directory} is not a pair-shard directory: it has no {MANIFEST}. "
            "Write shards with `keras-bert pretrain --write-shards DIR` (an "
            "interrupted write leaves no manifest; run it again)."
        )
    with open(path) as file:
        manifest = json.load(file)
    if manifest.get("format") != _FORMAT or manifest.get("version") != _VERSION:
        raise ValueError(
            f"{path} is not a version-{_VERSION} {_FORMAT} manifest "
            f"(format {manifest.get('format')!r}, version "
            f"{manifest.get('version')!r})."
        )
    return manifest


def _check_vocabulary(directory, tokenizer):
    with open(os.path.join(directory, "vocab.txt"), encoding="utf-8") as file:
        written = [line.rstrip("\n") for line in file]
    tokens = tokenizer.get_vocabulary()
    if tokens == written:
        return
    if len(tokens) != len(written):
        detail = f"{len(written)} tokens there, {len(tokens)} in this one"
    else:
        index = next(i for i, (a, b) in enumerate(zip(written, tokens)) if a != b)
        detail = (f"same size, {len(tokens)}, but id {index} is "
                  f"{written[index]!r} there and {tokens[index]!r} here")
    raise ValueError(
        f"The shards in {directory} hold ids of another vocabulary "
        f"({detail}). Train with the shards' own {directory}/vocab.txt, or "
        "write new shards with this vocabulary."
    )


def _clear_target(directory, overwrite):
    if not os.path.exists(directory) or not os.listdir(directory):
        return
    if not overwrite:
        raise FileExistsError(
            f"{directory} already exists and is not empty. Choose a new "
            "directory, or pass overwrite=True to replace the shards in it."
        )
    if not os.path.isfile(os.path.join(directory, MANIFEST)):
        # Only a shard directory is ever deleted, never unrelated files.
        raise FileExistsError(
            f"Refusing to replace {directory}: it is not a pair-shard "
            f"directory (no {MANIFEST})."
        )
    shutil.rmtree(directory)


def _temporary_name(index):
    return f"pairs-{index:05d}.tfrecord.partial"


def _int64_feature(values):
    values = [int(v) for v in values]
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _example(token_ids_a, token_ids_b, is_next):
    features = tf.train.Features(feature={
        "token_ids_a": _int64_feature(token_ids_a),
        "token_ids_b": _int64_feature(token_ids_b),
        "is_next": _int64_feature([is_next]),
    })
    return tf.train.Example(features=features).SerializeToString()


def _parse(record):
    parsed = tf.io.parse_single_example(record, _FEATURES)
    return (tf.cast(tf.sparse.to_dense(parsed["token_ids_a"]), tf.int32),
            tf.cast(tf.sparse.to_dense(parsed["token_ids_b"]), tf.int32),
            tf.cast(parsed["is_next"], tf.int32))
