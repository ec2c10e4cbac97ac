"""What a backbone or task does about LoRA adapters."""

from keras_bert.models import lora_weights


class AdaptersMixin:
    """Saves and loads a model's LoRA adapters alone (`BertBackbone` and
    every task), and retraces its compiled functions when it gains
    variables.

    `backbone.enable_lora` (or `quantize`) after a `predict`, `evaluate` or
    `fit` adds variables the compiled function was traced without, and
    TensorFlow would keep running that trace: predictions that ignore the
    adapters. Each `make_*_function` therefore traces again when the
    model's variable count moved since its function was made.
    """

    def save_lora_weights(self, filepath):
        """Writes the LoRA adapters alone to a safetensors file.

        The file holds each adapted layer's A and B (`enable_lora`), a
        task's heads too (its weights outside the backbone, trained with
        the adapters), and the rank, alpha, roles and backbone shape:
        a few hundred kilobytes that `load_lora_weights` puts back onto
        the base model they were trained from. Written beside `filepath`
        and renamed over it, so a failed save leaves the old file.

        Args:
            filepath: str. A name ending in ".safetensors", e.g.
                "sst2.lora.safetensors".

        Example:
        >>> import os, tempfile
        >>> import keras_bert
        >>> model = keras_bert.BertClassifier(
        ...     backbone=keras_bert.BertBackbone.from_preset(
        ...         "bert_tiny_uncased_config"), num_classes=2)
        >>> model.backbone.enable_lora(4)
        >>> path = os.path.join(tempfile.mkdtemp(), "sst2.lora.safetensors")
        >>> model.save_lora_weights(path)
        >>> fresh = keras_bert.BertClassifier(  # the base model, as trained
        ...     backbone=keras_bert.BertBackbone.from_preset(
        ...         "bert_tiny_uncased_config"), num_classes=2)
        >>> fresh.load_lora_weights(path)
        >>> [w.path for w in fresh.backbone.trainable_weights][:1]
        ['transformer_layer_0/attention/query_key_value/lora_kernel_a']
        """
        lora_weights.save_lora_weights(self, filepath)

    def load_lora_weights(self, filepath):
        """Loads a file of `save_lora_weights`: the adapters (enabling LoRA
        as the file says when it is off) and, on a task, its heads.

        A file that does not fit (another backbone shape, other heads,
        LoRA already on with other settings) is refused, naming what
        differs, before anything changes. A backbone takes the adapters of
        a task's file; a task takes a backbone's file only if it has no
        weights of its own (e.g. `BertTextEmbedder`).

        Args:
            filepath: str. A file written by `save_lora_weights`.
        """
        lora_weights.load_lora_weights(self, filepath)

    def make_train_function(self, force=False):
        return super().make_train_function(force=self._retrace("train", force))

    def make_test_function(self, force=False):
        return super().make_test_function(force=self._retrace("test", force))

    def make_predict_function(self, force=False):
        return super().make_predict_function(
            force=self._retrace("predict", force))

    def _retrace(self, kind, force):
        count = len(self.variables)
        made = getattr(self, f"_{kind}_variable_count", count)
        setattr(self, f"_{kind}_variable_count", count)
        return force or made != count
