import warnings

import keras
import numpy as np
from keras import ops

from keras_bert.checkpoints.preset_names import resolve_preset
from keras_bert.checkpoints.sentence_transformers_config import (
    read_sentence_transformers_config,
)
from keras_bert.layers.sentence_pooling import SentencePooling
from keras_bert.losses.multiple_negatives_ranking_loss import (
    MultipleNegativesRankingLoss,
)
from keras_bert.models.bucketed_inference import predict_bucketed
from keras_bert.models.bucketed_inference import progress_bar
from keras_bert.models.finetuning_task import FinetuningMixin
from keras_bert.models.shared_rows import MAX_TEXTS_PER_ROW
from keras_bert.models.shared_rows import predict_shared_rows
from keras_bert.models.shared_rows import shared_row_output

# Texts packed at a time by `encode`: bounds the memory of the packed ids
# (rows are sorted by length within a chunk only).
ENCODE_CHUNK = 8192
# Texts a model call of `encode`, measured on all-MiniLM-L6-v2 with shared
# rows (docs/retrieval.md): against 32, 64 encoded SST-2 sentences 5-8%
# faster on TensorFlow and 3% on JAX, and as fast on PyTorch and on SQuAD
# paragraphs. (sentence-transformers keeps 32: padding each batch to its
# longest text, it slows with larger ones.)
ENCODE_BATCH_SIZE = 64


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTextEmbedder(FinetuningMixin, keras.Model):
    """Sentence embeddings (bi-encoder): texts in, one vector per text out.

    The backbone encodes each text as `[CLS] text [SEP]`; `SentencePooling`
    turns its last-layer vectors into one (mean over the real tokens,
    [CLS] or max) and L2-normalizes it, so a dot product of two vectors is
    their cosine similarity. `from_preset` reads sentence-transformers
    directories (`modules.json` with Transformer, Pooling and Normalize
    modules), so all-MiniLM-L6-v2 gives the vectors
    `SentenceTransformer(dir).encode` gives.

    Inputs: the backbone's dict (one text a row) -> `(batch, dim)` float32;
    or a tuple of such dicts (anchor, positive, negatives...) ->
    `(batch, columns, dim)`, which is what contrastive training feeds to
    `MultipleNegativesRankingLoss` (the default loss of `compile()`); or
    rows of several texts (`token_ids`, `segment_ids`, `position_ids`,
    `text_numbers`, see `keras_bert.models.shared_rows`) ->
    `(rows, MAX_TEXTS_PER_ROW, dim)`, what `encode` runs.

    With a `BertTextEmbedderPreprocessor`, `encode(texts)` is the fast path
    (several texts a row without padding, progress bar), `predict(texts)`
    works on strings and `fit((queries, passages))` (lists or a `tf.data`
    dataset of string pairs) trains with in-batch negatives.

    An empty string is packed as `[CLS] [SEP]` and embeds to the pooled,
    normalized vector of those two tokens (what sentence-transformers gives
    for ""); a text longer than the preprocessor's `sequence_length` is
    truncated, and `encode` warns with the number of such texts.

    The backbone's [CLS] pooler (`backbone.pooler`) plays no part and is
    made non-trainable.

    Args:
        backbone: `keras_bert.BertBackbone`.
        pooling: str. "mean", "cls" or "max".
        normalize: bool. L2-normalize the vectors.
        preprocessor: optional `BertTextEmbedderPreprocessor`.

    Example:
    >>> import numpy as np
    >>> backbone = keras_bert.BertBackbone(vocabulary_size=100, num_layers=2,
    ...     num_heads=2, hidden_dim=16, intermediate_dim=32)
    >>> embedder = BertTextEmbedder(backbone, pooling="mean")
    >>> vectors = embedder({"token_ids": np.array([[2, 8, 9, 3]]),
    ...                     "segment_ids": np.zeros((1, 4), "int32"),
    ...                     "padding_mask": np.ones((1, 4), "int32")})
    >>> tuple(vectors.shape)
    (1, 16)
    >>> round(float(np.linalg.norm(keras.ops.convert_to_numpy(vectors))), 4)
    1.0
    """

    def __init__(self, backbone, pooling="mean", normalize=True,
                 preprocessor=None, **kwargs):
        # === Layers ===
        sentence_pooling = SentencePooling(
            mode=pooling, normalize=normalize, dtype="float32",
            name="sentence_pooling")
        # Built now (it has no weights): Keras calls a model with an unbuilt
        # layer once eagerly before compiling its `predict_on_batch`, which
        # on JAX compiles every operation of BERT one by one.
        sentence_pooling.build((None, None, backbone.hidden_dim))
        # === Model ===
        # A subclassed model: a tuple of texts (anchor, positive, ...) runs
        # each column at its own padded length, which one Functional
        # graph with a fixed input structure could not.
        super().__init__(backbone=backbone, preprocessor=preprocessor,
                         **kwargs)
        self.sentence_pooling = sentence_pooling
        # The tanh pooler is not part of an embedding (sentence-transformers
        # never trains it either); frozen, it gets no "missing gradient"
        # warnings and no weight decay.
        backbone.pooler.trainable = False
        self.built = True
        # === Config ===
        self.pooling = pooling
        self.normalize = normalize
        self.compile()

    def call(self, inputs, training=False):
        if isinstance(inputs, dict) and "text_numbers" in inputs:
            return self.sentence_pooling(
                shared_row_output(self.backbone, inputs, training),
                inputs["text_numbers"], texts_per_row=MAX_TEXTS_PER_ROW)
        if isinstance(inputs, dict):
            return self._embed(inputs, training)
        return ops.stack([self._embed(column, training) for column in inputs],
                         axis=1)

    def _embed(self, inputs, training):
        outputs = self.backbone(inputs, training=training)
        return self.sentence_pooling(outputs["sequence_output"],
                                     inputs["padding_mask"])

    def encode(self, texts, batch_size=ENCODE_BATCH_SIZE, verbose="auto",
               bucket_lengths=None, share_rows=True):
        """Vectors of many texts, fast: no padding, few compiled shapes.

        Texts are tokenized together. With `share_rows` (the default)
        they are laid end to end in rows of one length (the bucket of the
        longest text, at least `shared_rows.MIN_ROW_LENGTH` = 64 tokens),
        each text with its own positions and attending only to itself
        (`keras_bert.models.shared_rows`), so a call does the work of real
        tokens, not padding; a text's vector is the one it gets alone.
        Without, texts are sorted by length and run in batches cut to the
        shortest bucket that holds them (see
        `BertBackbone.predict_bucketed`).

        Args:
            texts: str or list of str.
            batch_size: int. Texts per model call (about, when sharing
                rows; default 64, `ENCODE_BATCH_SIZE`).
            verbose: "auto", 0 or 1. Progress bar ("auto": when there is
                more than one batch).
            bucket_lengths: list of int or None. Allowed padded (or row)
                lengths (default: multiples of 8 to 64, of 16 to 128, then
                of 32).
            share_rows: bool. Several texts per row (True) or one.

        Returns:
            float32 NumPy array `(len(texts), dim)`, in input order; `(dim,)`
            for a single string. Texts longer than the preprocessor's
            `sequence_length` are truncated, with one warning that counts
            them.
        """
        if self.preprocessor is None:
            raise ValueError(
                "BertTextEmbedder.encode needs a preprocessor (attach a "
                "BertTextEmbedderPreprocessor, or load with from_preset).")
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(
                    f"encode takes strings; text {index} is a "
                    f"{type(text).__name__} ({text!r:.40}).")
        progress = progress_bar(len(texts), batch_size, verbose, "text")
        dim = self.backbone.hidden_dim
        vectors, truncated = [np.zeros((0, dim), "float32")], 0
        for start in range(0, len(texts), ENCODE_CHUNK):
            packed, chunk_truncated = self.preprocessor.pack_texts(
                texts[start:start + ENCODE_CHUNK])
            truncated += chunk_truncated
            predict = predict_shared_rows if share_rows else predict_bucketed
            vectors.append(predict(
                self, packed, batch_size=batch_size,
                bucket_lengths=bucket_lengths, progress=progress))
        if truncated:
            warnings.warn(
                f"{truncated} of {len(texts)} texts were longer than "
                f"sequence_length={self.preprocessor.sequence_length} tokens "
                "and were truncated.", stacklevel=2)
        vectors = np.concatenate(vectors).astype("float32")
        return vectors[0] if single else vectors

    def default_loss(self):
        return MultipleNegativesRankingLoss()

    @classmethod
    def from_preset(cls, preset, load_weights=True, preprocessor="auto",
                    sequence_length=None, **kwargs):
        """An embedder from a sentence-transformers model (by name, e.g.
        "sentence-transformers/all-MiniLM-L6-v2", or its directory), or a
        HF, Google, keras_bert or keras-hub checkpoint.

        A sentence-transformers directory (`modules.json`) sets `pooling`,
        `normalize`, the sequence length (`sentence_bert_config.json`) and
        where the BERT weights are; a module other than Transformer,
        Pooling and Normalize is refused by name. Other directories give
        mean pooling with normalization unless `pooling`/`normalize` are
        passed. Arguments as in `Task.from_preset`.
        """
        preset = resolve_preset(preset, load_weights,
                                kwargs.get("allow_pickle", False))
        config = read_sentence_transformers_config(preset)
        if config is None:
            return super().from_preset(preset, load_weights, preprocessor,
                                       sequence_length, **kwargs)
        kwargs.setdefault("pooling", config.pooling)
        kwargs.setdefault("normalize", config.normalize)
        model = super().from_preset(
            config.transformer_dir, load_weights, preprocessor,
            sequence_length or config.max_seq_length, **kwargs)
        config.check_dimension(model.backbone.hidden_dim)
        attached = model.preprocessor
        if config.lowercase and attached is not None and not (
                attached.tokenizer.lowercase):
            # sentence_bert_config's do_lower_case adds lowercasing to a
            # cased tokenizer.
            tokenizer = type(attached.tokenizer).from_config(
                {**attached.tokenizer.get_config(), "lowercase": True})
            model.preprocessor = type(attached).from_config(
                {**attached.get_config(), "tokenizer": tokenizer})
        return model

    def get_config(self):
        config = super().get_config()
        config.update(pooling=self.pooling, normalize=self.normalize)
        return config
