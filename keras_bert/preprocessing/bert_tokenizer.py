import collections.abc
import types

import keras

from keras_bert.checkpoints.preset_names import resolve_preset
from keras_bert.preprocessing import bert_text_ops
from keras_bert.preprocessing import vocabulary_io
from keras_bert.preprocessing.preprocessing_layer import PreprocessingLayer
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.tensorflow_modules import tf
from keras_bert.preprocessing.tensorflow_modules import tf_text


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenizer(PreprocessingLayer):
    """BERT's WordPiece tokenizer as TF graph code (tensorflow-text).

    Text is cleaned, split and normalized as in the original BERT and Hugging
    Face's `BertTokenizerFast` (rules in
    `keras_bert.preprocessing.bert_text_ops`), then split into WordPieces
    by tensorflow-text's `FastWordpieceTokenizer` (greedy
    longest-match-first, `##` marks a continuation). A word of more than `max_input_chars_per_word` characters
    (Unicode code points, after normalization) becomes a single `[UNK]`, as
    does a word that cannot be covered by vocabulary pieces.

    Runs eagerly, in `tf.data.Dataset.map` and in a `tf.function` under every
    Keras backend. A string gives a dense `[tokens]` tensor of int32 ids; a
    batch of strings gives a `tf.RaggedTensor` `[batch, (tokens)]`. Eager
    dense outputs are backend tensors (see
    `keras_bert.preprocessing.preprocessing_layer`).

    Args:
        vocabulary: str or list of str. Path of a `vocab.txt` (one token per
            line, the line index is the id) or the list of tokens.
        lowercase: bool. Lowercase the text (uncased checkpoints).
        strip_accents: bool or None. Decompose (NFD) and drop nonspacing
            marks; `None` follows `lowercase`, as in BERT.
        split_cjk: bool. Make every CJK ideograph a word of its own.
        max_input_chars_per_word: int. Longer words become `[UNK]`.
        unknown_token, pad_token, cls_token, sep_token, mask_token: str. The
            special tokens; all must be in the vocabulary.
        model_max_length: int or None. Longest sequence the matching model
            takes; only recorded (for presets and `BertPreprocessor`).
        special_tokens_in_strings: bool. If True, the special tokens written
            in the text ("Paris is the [MASK] of France.") become their ids,
            as in `BertTokenizerFast`. If False (the default, safe for
            untrusted text) they are plain text: "[", "mask", "]".

    Example:

    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu",
    ...      "##ick", "fox", "."])
    >>> tokenizer("The quick fox.").numpy().tolist()  # doctest: +SKIP
    [5, 6, 7, 8, 9]
    >>> tokenizer.detokenize([5, 6, 7, 8])
    'the quick fox'
    """

    def __init__(
        self,
        vocabulary,
        lowercase=True,
        strip_accents=None,
        split_cjk=True,
        max_input_chars_per_word=100,
        unknown_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=None,
        special_tokens_in_strings=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.split_cjk = split_cjk
        self.max_input_chars_per_word = max_input_chars_per_word
        self.unknown_token = unknown_token
        self.pad_token = pad_token
        self.cls_token = cls_token
        self.sep_token = sep_token
        self.mask_token = mask_token
        self.model_max_length = model_max_length
        self.special_tokens_in_strings = special_tokens_in_strings

        vocabulary = vocabulary_io.load_vocabulary(vocabulary)
        # Read-only containers that Keras' and TensorFlow's attribute
        # tracking pass over: a tuple or dict attribute is walked token by
        # token when it is set.
        self._vocabulary = _Tokens(vocabulary)
        self._ids = types.MappingProxyType(
            {token: index for index, token in enumerate(vocabulary)})
        special = {name: getattr(self, name) for name in
                   vocabulary_io.SPECIAL_TOKEN_ARGS}
        missing = {k: v for k, v in special.items() if v not in self._ids}
        if missing:
            raise ValueError(
                f"The vocabulary lacks the special tokens {missing}. Add them "
                "(`keras_bert.train_vocabulary` puts [PAD] [UNK] [CLS] [SEP] "
                "[MASK] first) or pass the names this vocabulary uses, e.g. "
                "`unknown_token='<unk>'`."
            )
        if not isinstance(max_input_chars_per_word, int) or (
            max_input_chars_per_word < 1
        ):
            raise ValueError(
                "`max_input_chars_per_word` must be a positive int; got "
                f"{max_input_chars_per_word!r}."
            )
        self._special_pattern = (
            bert_text_ops.special_tokens_pattern(special.values())
            if special_tokens_in_strings else None
        )
        self._wordpiece_op = None

    def _wordpiece(self):
        # Built at the first TensorFlow call: building a model's
        # preprocessor imports no TensorFlow and builds no op that a job
        # tokenizing on the host (`host_preprocessing`) never calls. A
        # method, not a property: Keras' saving reads every attribute.
        if self._wordpiece_op is None:
            with tf.init_scope():  # eager resources, even inside a trace
                self._wordpiece_op = self._build_wordpiece()
        return self._wordpiece_op

    def _build_wordpiece(self):
        # The op counts bytes; a code point is at most 4 bytes, so the
        # character limit (checked in `_words`) is always the one that bites.
        return tf_text.FastWordpieceTokenizer(
            vocab=list(self._vocabulary),
            suffix_indicator="##",
            max_bytes_per_word=4 * self.max_input_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=self.unknown_token,
            no_pretokenization=True,
            support_detokenization=True,
        )

    # Vocabulary ----------------------------------------------------------

    def get_vocabulary(self):
        """Returns the list of tokens; the index of a token is its id."""
        return list(self._vocabulary)

    def vocabulary_size(self):
        return len(self._vocabulary)

    def token_to_id(self, token):
        if token not in self._ids:
            raise ValueError(f"Token {token!r} is not in the vocabulary.")
        return self._ids[token]

    def id_to_token(self, id):
        id = int(id)
        if not 0 <= id < len(self._vocabulary):
            raise ValueError(
                f"Token id {id} is out of range for a vocabulary of "
                f"{len(self._vocabulary)} tokens."
            )
        return self._vocabulary[id]

    @property
    def pad_token_id(self):
        return self._ids[self.pad_token]

    @property
    def unk_token_id(self):
        return self._ids[self.unknown_token]

    @property
    def cls_token_id(self):
        return self._ids[self.cls_token]

    @property
    def sep_token_id(self):
        return self._ids[self.sep_token]

    @property
    def mask_token_id(self):
        return self._ids[self.mask_token]

    # Tokenization --------------------------------------------------------

    def _text_batch(self, inputs):
        """Checks `inputs` and returns it as a rank-1 string tensor."""
        if isinstance(inputs, tf.RaggedTensor) or not isinstance(
            inputs, tf.Tensor
        ):
            raise TypeError(
                "BertTokenizer takes a string or a 1D batch of strings; got "
                f"{type(inputs).__name__}."
            )
        if inputs.dtype != tf.string:
            raise TypeError(
                "BertTokenizer takes strings; got a tensor of dtype "
                f"{inputs.dtype.name}. Token ids go to `detokenize`."
            )
        if inputs.shape.rank not in (0, 1):
            raise ValueError(
                "BertTokenizer takes a string or a 1D batch of strings; got "
                f"shape {inputs.shape}. Flatten or batch the text first."
            )
        text = tf.reshape(inputs, [-1])
        return bert_text_ops.sanitize_utf8(text), inputs.shape.rank == 0

    def _effective_strip_accents(self):
        if self.strip_accents is None:
            return self.lowercase
        return self.strip_accents

    def _mark_long_words(self, words):
        too_long = tf.strings.length(words, unit="UTF8_CHAR") > (
            self.max_input_chars_per_word
        )
        marked = tf.where(too_long, self.unknown_token, words)
        return marked, too_long

    @tf_preprocessing
    def tokenize(self, inputs):
        """Strings -> token ids (`[tokens]` or ragged `[batch, (tokens)]`)."""
        text, scalar = self._text_batch(inputs)
        text = bert_text_ops.normalize_text(
            text, self.lowercase, self._effective_strip_accents(),
            self._special_pattern,
        )
        words = bert_text_ops.split_words(
            text, self.split_cjk, self._special_pattern
        )
        words = words.with_flat_values(
            self._mark_long_words(words.flat_values)[0]
        )
        token_ids = self._wordpiece().tokenize(words).merge_dims(1, 2)
        return token_ids[0] if scalar else token_ids

    @tf_preprocessing
    def call(self, inputs):
        return self.tokenize(inputs)

    @tf_preprocessing
    def tokenize_with_offsets(self, inputs):
        """Returns `(token_ids, starts, ends)`.

        `starts`/`ends` are character offsets (Unicode code points, i.e.
        indices into the Python `str`) into the ORIGINAL text, end exclusive:
        `text[start:end]` is the text a token came from. Tokens from one
        character (a Hangul syllable decomposes into 2-3 jamo) all span that
        character, as in `BertTokenizerFast`. For bytes input with invalid
        UTF-8, each invalid sequence counts as one character (U+FFFD).
        """
        text, scalar = self._text_batch(inputs)
        normalized, byte_starts, byte_ends = (
            bert_text_ops.normalize_characters(
                text, self.lowercase, self._effective_strip_accents(),
                self._special_pattern,
            )
        )
        words, word_starts, word_ends = bert_text_ops.split_words_with_offsets(
            normalized, self.split_cjk, self._special_pattern
        )
        marked, too_long = self._mark_long_words(words.flat_values)
        token_ids, starts, ends = self._wordpiece().tokenize_with_offsets(
            words.with_flat_values(marked)
        )
        starts, ends = bert_text_ops.piece_offsets_in_text(
            starts, ends, word_starts, word_ends, whole_word=too_long
        )
        token_ids = token_ids.merge_dims(1, 2)
        starts, ends = bert_text_ops.char_offsets_to_original(
            byte_starts, byte_ends, starts, ends
        )
        outputs = (token_ids, starts, ends)
        return tuple(x[0] for x in outputs) if scalar else outputs

    @tf_preprocessing
    def detokenize(self, token_ids):
        """Token ids -> text; `[PAD]` ids are dropped, `##` pieces merged.

        `[tokens]` gives a string; `[batch, tokens]` (dense or ragged) gives
        a batch of strings. Eagerly these are Python `str`.
        """
        if not isinstance(token_ids, tf.RaggedTensor):
            token_ids = tf.convert_to_tensor(token_ids)
        if not token_ids.dtype.is_integer:
            raise TypeError(
                "`detokenize` takes integer token ids; got dtype "
                f"{token_ids.dtype.name}."
            )
        scalar = token_ids.shape.rank == 1
        if scalar:
            token_ids = token_ids[tf.newaxis]
        if not isinstance(token_ids, tf.RaggedTensor):
            token_ids = tf.RaggedTensor.from_tensor(token_ids)
        token_ids = tf.cast(token_ids, tf.int32)
        flat = token_ids.flat_values
        size = self.vocabulary_size()
        in_range = tf.reduce_all((flat >= 0) & (flat < size))
        message = f"token ids must be in [0, {size})"
        if tf.executing_eagerly():
            if not bool(in_range):
                raise ValueError(f"`detokenize`: {message}; got {flat}.")
        else:
            # The op itself would read out of bounds; fail cleanly instead.
            check = tf.debugging.Assert(in_range, [message])
            with tf.control_dependencies([check]):
                token_ids = token_ids.with_flat_values(tf.identity(flat))
        token_ids = tf.ragged.boolean_mask(
            token_ids, token_ids != self.pad_token_id
        )
        text = self._wordpiece().detokenize(token_ids)
        return text[0] if scalar else text

    # Presets and config --------------------------------------------------

    @classmethod
    def from_preset(cls, directory, **kwargs):
        """Loads a tokenizer from a pretrained model's name or directory.

        `directory` is a local directory or a name `BertBackbone.from_preset`
        takes (a Hugging Face id or `hf://` handle, a keras-hub preset
        name); a name fetches the tokenizer files only. Reads `vocab.txt`
        (or a WordPiece `tokenizer.json`) and
        `tokenizer_config.json` when present. Without a config (an original
        Google checkpoint directory) the casing is inferred from the
        vocabulary: one with (almost) no uppercase tokens is uncased. See
        `keras_bert.preprocessing.vocabulary_io`. `kwargs` override what was
        read.
        """
        directory = resolve_preset(directory, load_weights=False)
        config = vocabulary_io.read_tokenizer_preset(directory)
        config.update(kwargs)
        return cls(**config)

    def save_to_preset(self, directory):
        """Writes `vocab.txt` and a HF-compatible `tokenizer_config.json`."""
        vocabulary_io.write_tokenizer_preset(directory, self)

    @classmethod
    def from_config(cls, config):
        """Rebuilds a tokenizer from `get_config()`, which lists its tokens.

        A config comes from a file (a `.keras` archive, a preset's
        `config.json`), so a `vocabulary` that is a path is refused: it
        could name any file on the machine (a preset's `vocab.txt` is read
        by the preset loader, inside the preset's directory). A path given
        to the constructor from Python stays the caller's choice.
        """
        vocabulary = config.get("vocabulary")
        if not isinstance(vocabulary, (list, tuple)):
            raise ValueError(
                f"{cls.__name__} config: `vocabulary` must list the tokens "
                f"(as `get_config()` writes it); got {vocabulary!r:.80}. A "
                "path in a saved model is refused: it could name any file "
                "on this machine. Load a preset with `from_preset(dir)`, "
                "which reads the vocab.txt inside it.")
        return super().from_config(config)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": self.get_vocabulary(),
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "split_cjk": self.split_cjk,
                "max_input_chars_per_word": self.max_input_chars_per_word,
                "unknown_token": self.unknown_token,
                "pad_token": self.pad_token,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "mask_token": self.mask_token,
                "model_max_length": self.model_max_length,
                "special_tokens_in_strings": self.special_tokens_in_strings,
            }
        )
        return config


class _Tokens(collections.abc.Sequence):
    # Not a tuple: Keras' tracking and its saving walk tuples element by
    # element (and TensorFlow's checks every element of one).
    __slots__ = ("_tokens",)

    def __init__(self, tokens):
        self._tokens = tuple(tokens)

    def __len__(self):
        return len(self._tokens)

    def __getitem__(self, index):
        return self._tokens[index]
