"""A task's presets: `from_preset`, with the preprocessor its vocabulary
gives, and `save_to_preset`."""

import warnings

from keras_bert.checkpoints.loading import load_task
from keras_bert.checkpoints.preset_names import resolve_preset
from keras_bert.checkpoints.saving import save_to_preset
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.sequence_length_check import check_sequence_length
from keras_bert.tasks.registry import load_class
from keras_bert.tasks.registry import record_of_class


def _with_length(preprocessor, sequence_length):
    return type(preprocessor).from_config(
        {**preprocessor.get_config(), "sequence_length": sequence_length})


class TaskPresetsMixin:
    """Loads a task from a preset or checkpoint directory and saves it as
    one; part of every task through `TaskMixin`.

    A task class names the backbone built under its heads
    (`backbone_class`); its task record (`keras_bert.tasks`) names the
    preprocessor a preset's vocabulary gives it, built with
    `preprocessor_arguments()`.
    """

    # The backbone `from_preset` builds under the heads.
    backbone_class = BertBackbone

    @classmethod
    def from_preset(cls, preset, load_weights=True, preprocessor="auto",
                    sequence_length=None, **kwargs):
        """Builds the task on a backbone loaded from a preset or directory.

        Heads stored with the checkpoint (e.g. the MLM/NSP heads, or a
        fine-tuned classifier) are loaded too when the directory has them.
        When the directory has a vocabulary (Hugging Face, Google,
        keras_bert or keras-hub layouts), the task's preprocessor is
        attached, so `predict` and `fit` take raw text; without one the
        model takes token ids and a warning says so.

        Args:
            preset: str. A pretrained model's name (a Hugging Face id
                or `hf://` handle, a keras-hub preset name) or a checkpoint
                directory; see `BertBackbone.from_preset`.
            load_weights: bool. Load the weights, or build the
                architecture only.
            preprocessor: "auto" (build one from the directory's
                vocabulary, or keep the one a task preset stored), None
                (no preprocessor), or a preprocessor layer to attach.
            sequence_length: int or None. Packed length of the attached
                preprocessor; None keeps a stored one's, else the
                preprocessor's default capped at the checkpoint's maximum.
            **kwargs: `BertBackbone` overrides (e.g. `dropout`, `dtype`)
                and task arguments (e.g. `num_classes`).
        """
        preset = resolve_preset(preset, load_weights,
                                kwargs.get("allow_pickle", False))
        model = load_task(cls, preset, load_weights=load_weights, **kwargs)
        if preprocessor == "auto":
            preprocessor = model._preset_preprocessor(preset, sequence_length)
        check_sequence_length(preprocessor, model.backbone)
        model.preprocessor = preprocessor
        return model

    def _preset_preprocessor(self, preset, sequence_length):
        # In the preprocessing package: TensorFlow, imported when needed.
        from keras_bert.preprocessing.vocabulary_io import has_vocabulary

        stored = self.preprocessor
        if stored is not None:
            if sequence_length in (None, stored.sequence_length):
                return stored
            return _with_length(stored, sequence_length)
        if not has_vocabulary(preset):
            warnings.warn(
                f"{preset} has no vocabulary (vocab.txt), so the "
                f"{type(self).__name__} has no preprocessor and takes token "
                "ids, not text. Pass preprocessor=... to attach one.",
                stacklevel=3,
            )
            return None
        # The default length is capped at the checkpoint's positions.
        return self._preprocessor_class().from_preset(
            preset, sequence_length=sequence_length,
            max_positions=self.backbone.max_sequence_length,
            **self.preprocessor_arguments())

    def _preprocessor_class(self):
        record = record_of_class(type(self))
        if record is None or record.preprocessor_class is None:
            raise TypeError(
                f"{type(self).__name__} has no task record naming its "
                "preprocessor, so from_preset cannot attach one: register "
                "the task (keras_bert.tasks.register_task), or pass "
                "preprocessor=... or preprocessor=None.")
        # The preprocessors are TensorFlow code: imported when one is built.
        return load_class(record.preprocessor_class)

    def preprocessor_arguments(self):
        """Arguments `from_preset` gives the preprocessor it attaches."""
        return {}

    def save_to_preset(self, preset_dir):
        """Writes a keras_bert preset directory (config, weights, vocab)."""
        save_to_preset(self, preset_dir)
