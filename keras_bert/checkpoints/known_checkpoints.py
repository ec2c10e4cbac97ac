"""Pretrained BERTs on the Hugging Face Hub that keras_bert loads by name.

Each entry is a repository in one of the layouts keras_bert reads (a
`transformers` BERT, with or without a task head, or a
sentence-transformers model), with the class to load it into, its
architecture (from which the size is counted) and what it was trained
for. `BertBackbone.presets()` lists them beside the named sizes, and
docs/checkpoints.md shows the table. Any other BERT repository loads the
same way; these are the ones a user most often starts from.
"""

# Architecture: (layers, hidden size, attention heads, vocabulary size).
_UNCASED, _CASED = 30522, 28996


def _entry(task, architecture, trained_for, intermediate=None):
    layers, hidden, heads, vocabulary = architecture
    return {"class": task, "num_layers": layers, "hidden_dim": hidden,
            "num_heads": heads, "vocabulary_size": vocabulary,
            "intermediate_dim": intermediate or 4 * hidden,
            "description": trained_for}


_GOOGLE = {
    "bert-base-uncased": ((12, 768, 12, _UNCASED), "English, lowercased"),
    "bert-base-cased": ((12, 768, 12, _CASED), "English, cased"),
    "bert-large-uncased": ((24, 1024, 16, _UNCASED), "English, lowercased"),
    "bert-large-cased": ((24, 1024, 16, _CASED), "English, cased"),
    "bert-base-multilingual-cased": ((12, 768, 12, 119547),
                                     "104 languages, cased"),
    "bert-base-multilingual-uncased": ((12, 768, 12, 105879),
                                       "102 languages, lowercased"),
    "bert-base-chinese": ((12, 768, 12, 21128), "Chinese"),
}

KNOWN_CHECKPOINTS = {
    **{f"google-bert/{name}": _entry(
        "BertBackbone (BertPretrainer: with its MLM and NSP heads)",
        architecture, f"Pretrained (MLM + NSP), {language}; Devlin et al.")
       for name, (architecture, language) in _GOOGLE.items()},
    # The 24 smaller BERTs of Turc et al. (2019), English, lowercased.
    **{f"google/bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}": _entry(
        "BertBackbone (BertPretrainer: with its MLM and NSP heads)",
        (layers, hidden, hidden // 64, _UNCASED),
        "Pretrained (MLM + NSP), English, lowercased; Turc et al. (2019)")
       for layers in (2, 4, 6, 8, 10, 12)
       for hidden in (128, 256, 512, 768)},
    "sentence-transformers/all-MiniLM-L6-v2": _entry(
        "BertTextEmbedder", (6, 384, 12, _UNCASED),
        "Sentence embeddings (mean pooling, normalized), trained on 1B "
        "sentence pairs", intermediate=1536),
    "sentence-transformers/all-MiniLM-L12-v2": _entry(
        "BertTextEmbedder", (12, 384, 12, _UNCASED),
        "Sentence embeddings (mean pooling, normalized), trained on 1B "
        "sentence pairs", intermediate=1536),
    "cross-encoder/ms-marco-MiniLM-L-6-v2": _entry(
        "BertCrossEncoder", (6, 384, 12, _UNCASED),
        "Passage reranking (one relevance score per query and passage), "
        "MS MARCO", intermediate=1536),
    "dslim/bert-base-NER": _entry(
        "BertTokenClassifier", (12, 768, 12, _CASED),
        "Named entities, CoNLL-2003 (9 tags: O, B-/I-PER, ORG, LOC, MISC)"),
    "google-bert/bert-large-uncased-whole-word-masking-finetuned-squad":
        _entry("BertQuestionAnswerer", (24, 1024, 16, _UNCASED),
               "Extractive question answering, SQuAD 1.1"),
    "textattack/bert-base-uncased-SST-2": _entry(
        "BertClassifier", (12, 768, 12, _UNCASED),
        "Sentiment of a sentence, SST-2 (2 labels)"),
    "google-bert/bert-base-cased-finetuned-mrpc": _entry(
        "BertClassifier", (12, 768, 12, _CASED),
        "Paraphrase or not for a sentence pair, MRPC (2 labels)"),
}


def parameter_count(num_layers, hidden_dim, intermediate_dim,
                    vocabulary_size, max_sequence_length=512, num_segments=2,
                    **_):
    """Weights of a BERT encoder with its pooler (heads not counted)."""
    hidden, inner = hidden_dim, intermediate_dim
    embeddings = (vocabulary_size + max_sequence_length + num_segments + 2
                  ) * hidden
    block = 4 * (hidden * hidden + hidden) + 2 * hidden * inner + inner + (
        hidden) + 4 * hidden
    return embeddings + num_layers * block + hidden * hidden + hidden
