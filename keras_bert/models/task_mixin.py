"""What every task model has: `TaskMixin`, shared by the Functional
`Task` and the subclassed tasks."""

import math
import warnings

import keras

from keras_bert._compat.model_compile import AutoJitCompile
from keras_bert._compat.model_compile import save_jit_compile_as_auto
from keras_bert.checkpoints.backbone_arguments import TASK_BOUNDS
from keras_bert.checkpoints.backbone_arguments import check_whole_numbers
from keras_bert.models.adapters_mixin import AdaptersMixin
from keras_bert.models.build_before_tracing import build_before_tracing
from keras_bert.models.bucketed_inference import predict_bucketed
from keras_bert.models.bucketed_inference import progress_bar
from keras_bert.models.label_checks import checked_labels
from keras_bert.models.sequence_length_check import check_sequence_length
from keras_bert.models.task_presets_mixin import TaskPresetsMixin
from keras_bert.models.xla_default import xla_by_default
from keras_bert.quantization import needs_xla
from keras_bert.serialization import deserialize

# TensorFlow's optimizer says so when it traces the train step of a head
# that does not read the pooled output (JAX and PyTorch see a zero
# gradient). Nothing is wrong: the pooler is simply not part of the head.
UNREAD_POOLER_WARNING = (r"Gradients do not exist for variables "
                         r"\['pooler/kernel', 'pooler/bias'\]")


def _steps_per_epoch(x, batch_size):
    """Batches in one pass over `x`, or None when it cannot be known."""
    cardinality = getattr(x, "cardinality", None)
    if cardinality is not None:  # a tf.data.Dataset
        count = int(cardinality())
        return count if count >= 0 else None  # infinite or unknown: < 0
    leaves = keras.tree.flatten(x)
    if not leaves or not hasattr(leaves[0], "__len__"):
        return None
    return math.ceil(len(leaves[0]) / (batch_size or 32))


class TaskMixin(TaskPresetsMixin, AdaptersMixin, AutoJitCompile):
    """What every task model has, whether Functional or subclassed (see
    `Task`, whose docstring describes it).

    A mixin, not a `keras.Model` subclass: Keras rebases a model class on
    its Functional class the first time a Functional instance of it is
    built, so a subclassed task (e.g. `BertTextEmbedder`, which takes
    several text columns of their own lengths) must not share a
    `keras.Model` subclass with the Functional tasks. It takes this
    behaviour from the mixin instead.
    """

    maps_preprocessor = True
    # Whether `predict` on raw input may run length-bucketed batches
    # (`bucketed_inference.predict_bucketed`): true where each example's
    # output depends on its own tokens only and either does not run over
    # positions or has them zeroed where they are padding.
    predicts_bucketed = False
    # What `fit` and `evaluate` on raw input may cut from each batch's end
    # (`task_dataset.trim_padding`): None, "inputs" where the loss and
    # metrics see one output per example (or per choice), or
    # "inputs_and_labels" where labels and weights run over positions.
    trims_padding = None
    # False for heads on the sequence output: `fit` then keeps TensorFlow's
    # missing-gradient warning about the pooler quiet, and the default
    # optimizer keeps the pooler out of weight decay (`unread_weights`).
    reads_pooled_output = True
    # jit_compile="auto": XLA on TensorFlow's CPUs as well
    # (keras_bert/models/xla_default.py).
    xla_by_default = staticmethod(xla_by_default)

    def __init__(self, *args, backbone=None, preprocessor=None, **kwargs):
        check_sequence_length(preprocessor, backbone)
        super().__init__(*args, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        # A compile call to repeat with the run's length once `fit` knows
        # it (set by a subclass's `compile` whose schedule is "auto").
        self._sized_compile = None

    def unread_weights(self):
        """The backbone weights no output of this task reads: the pooler's,
        for a head on the sequence output.

        The default optimizers keep them out of weight decay: JAX gives
        them a zero gradient, and decoupled decay alone would shrink the
        pooler a later classifier starts from, on JAX only.
        """
        return [] if self.reads_pooled_output else list(
            self.backbone.pooler.weights)

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
        }
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(
                self.preprocessor
            )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        # A `.keras` file's head sizes, before a head is built from them.
        check_whole_numbers(config, TASK_BOUNDS, f"{cls.__name__} config")
        for key in ("backbone", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = deserialize(config[key])
        return cls(**config)

    def compile(self, *args, **kwargs):
        super().compile(*args, **kwargs)
        # Keras saves what "auto" resolved to on this backend (XLA on
        # TensorFlow and JAX), and a saved True reloaded on PyTorch means
        # torch.compile: a first predict that takes tens of seconds. Saved
        # as "auto", it resolves again on the backend that loads it.
        if kwargs.get("jit_compile", "auto") == "auto":
            save_jit_compile_as_auto(self)

    def compile_from_config(self, config):
        # Keras skips a custom `compile` on load unless told how: the saved
        # config holds the resolved optimizer, loss and metrics objects.
        self.compile(**keras.saving.deserialize_keras_object(config))
        unread = self.unread_weights()
        if unread and getattr(self.optimizer, "weight_decay", None):
            # Variables do not travel in the optimizer's config.
            self.optimizer.exclude_from_weight_decay(
                var_list=unread,
                var_names=getattr(self.optimizer, "excluded_names", None))
        if needs_xla(self):
            self.jit_compile = True
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """Quantizes the backbone's GEMMs (see `BertBackbone.quantize`).

        The heads keep the float dtype: they are a few small GEMMs whose
        outputs are the logits (the masked-LM decoder is the tied, float
        embedding table), and the backbone's config alone then records
        what was quantized, so the task saves and reloads as it is.

        Example:
        >>> import keras_bert
        >>> model = keras_bert.BertClassifier(
        ...     backbone=keras_bert.BertBackbone.from_preset(
        ...         "bert_tiny_uncased_config"), num_classes=2)
        >>> model.quantize("int8")
        >>> model.backbone.pooler.quantization_mode
        'int8'
        """
        # The compiled functions, traced on the float model, are traced
        # again: quantizing adds variables (`AdaptersMixin`).
        self.backbone.quantize(mode, config=config, filters=filters, **kwargs)
        if needs_xla(self):
            self.jit_compile = True

    def _takes_raw_input(self):
        return self.preprocessor is not None and self.maps_preprocessor

    def _to_dataset(self, x, y=None, sample_weight=None, batch_size=None,
                    shuffle=False, trim=None):
        # Preprocessors are TF graph code, so the pipeline is built lazily in
        # keras_bert.preprocessing; without one, inputs pass through as given.
        from keras_bert.preprocessing.tasks.task_dataset import (
            preprocessed_dataset,
        )

        return preprocessed_dataset(
            self.preprocessor,
            x,
            y=y,
            sample_weight=sample_weight,
            batch_size=batch_size,
            shuffle=shuffle,
            trim=trim,
        )

    def _to_repeated_dataset(self, data, batch_size, steps, shuffle):
        """`(dataset, steps)` for `fit`: `data` (a tuple `(x, y, sw)`)
        preprocessed, its passes repeated when the batches of one are known
        (`steps`, else counted), so that one iterator serves every epoch
        (see `preprocessed_batches`)."""
        # TensorFlow code, imported when a pipeline is built (`_to_dataset`).
        from keras_bert.preprocessing.tasks import task_dataset

        batches = task_dataset.input_batches(*data, batch_size=batch_size,
                                             shuffle=shuffle)
        steps = steps or _steps_per_epoch(batches, None)
        if steps is not None:
            batches = batches.repeat()
        return task_dataset.preprocessed_batches(
            self.preprocessor, batches, trim=self.trims_padding), steps

    def _size_schedule(self, x, batch_size, epochs, initial_epoch,
                       steps_per_epoch):
        if (self._sized_compile is None or self.optimizer is None
                or int(self.optimizer.iterations) > 0):
            return
        steps = steps_per_epoch or _steps_per_epoch(x, batch_size)
        if steps:
            self._sized_compile(steps * max(epochs - initial_epoch, 1))

    def fit(self, x=None, y=None, batch_size=None, epochs=1,
            sample_weight=None, validation_data=None, shuffle=True,
            initial_epoch=0, steps_per_epoch=None, **kwargs):
        y = checked_labels(self, y)
        if isinstance(validation_data, tuple) and len(validation_data) > 1:
            validation_data = (validation_data[0],
                               checked_labels(self, validation_data[1]),
                               *validation_data[2:])
        if self._takes_raw_input():
            if validation_data is not None:
                # Not repeated: `evaluate` starts a new iterator each time.
                validation_data = self._to_dataset(
                    *keras.utils.unpack_x_y_sample_weight(validation_data)
                    if isinstance(validation_data, tuple)
                    else (validation_data,),
                    batch_size=batch_size,
                    trim=self.trims_padding,
                )
            x, steps_per_epoch = self._to_repeated_dataset(
                (x, y, sample_weight), batch_size, steps_per_epoch, shuffle)
            y = sample_weight = batch_size = None
        if hasattr(x, "cardinality"):
            # A tf.data pipeline orders itself (`_to_dataset` shuffled raw
            # input); Keras would ignore `shuffle` with a warning.
            shuffle = False
        self._size_schedule(x, batch_size, epochs, initial_epoch,
                            steps_per_epoch)
        # After sizing the schedule, which may compile a new optimizer.
        build_before_tracing(self, x)
        with warnings.catch_warnings():
            if not self.reads_pooled_output:
                warnings.filterwarnings("ignore",
                                        message=UNREAD_POOLER_WARNING)
            return super().fit(
                x, y, batch_size=batch_size, epochs=epochs,
                sample_weight=sample_weight, validation_data=validation_data,
                shuffle=shuffle, initial_epoch=initial_epoch,
                steps_per_epoch=steps_per_epoch, **kwargs,
            )

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None,
                 **kwargs):
        y = checked_labels(self, y)
        # `fit` evaluates on the validation set it already preprocessed.
        if not self._takes_raw_input() or kwargs.get("_use_cached_eval_dataset"):
            return super().evaluate(
                x, y, batch_size=batch_size, sample_weight=sample_weight,
                **kwargs,
            )
        arrays = self._preprocessed_arrays(x, y, sample_weight,
                                           trim=self.trims_padding)
        if arrays is not None:
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(arrays)
            return super().evaluate(x, y, batch_size=batch_size,
                                    sample_weight=sample_weight, **kwargs)
        x = self._to_dataset(x, y, sample_weight, batch_size,
                             trim=self.trims_padding)
        return super().evaluate(x, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """The model's outputs for `x`, as NumPy arrays.

        With a preprocessor, `x` is raw input (strings, string pairs, word
        lists, or a `tf.data` dataset of them); otherwise the backbone's
        tensors. The outputs are the heads' **logits**, unnormalized
        float32 scores: `(batch, num_classes)` for `BertClassifier` (the
        score itself for a regressor), `(batch, length, num_classes)` for
        `BertTokenClassifier`, `(batch, length, 2)` start/end logits for
        `BertQuestionAnswerer`, `(batch, num_choices)` for
        `BertMultipleChoice`, and `BertPretrainer`'s dict of `mlm_logits`
        / `nsp_logits`. Apply a softmax over the last axis for
        probabilities (the exported SavedModel returns both).

        Raw input of up to 8,192 examples is preprocessed at once and the
        model runs on the arrays, with no `tf.data` pipeline to start
        each call; `BertClassifier` and `BertTokenClassifier` run
        it in length-bucketed batches, padded to each batch's bucket
        instead of the packed length (docs/performance.md, "Predict
        latency on raw text"), and the token classifier's logits at padded
        positions are then 0.
        Larger input and datasets stream through `tf.data`.
        """
        if not self._takes_raw_input():
            return super().predict(x, batch_size=batch_size, **kwargs)
        # Strings packed without TensorFlow where the preprocessor can.
        host_arrays = getattr(self.preprocessor, "host_arrays", None)
        arrays = host_arrays(x) if host_arrays is not None else None
        if arrays is None:
            arrays = self._preprocessed_arrays(x)
        if arrays is not None and self.predicts_bucketed and not (
                set(kwargs) - {"verbose"}):
            batch_size = batch_size or 32
            return predict_bucketed(self, arrays, batch_size=batch_size,
                                    progress=progress_bar(
                                        len(arrays["token_ids"]), batch_size,
                                        kwargs.get("verbose", "auto")))
        if arrays is not None:
            return super().predict(arrays, batch_size=batch_size, **kwargs)
        return super().predict(self._to_dataset(x, batch_size=batch_size),
                               **kwargs)

    def _preprocessed_arrays(self, x, y=None, sample_weight=None, trim=None):
        # TensorFlow code, imported when raw input comes (`_to_dataset`).
        from keras_bert.preprocessing.tasks import task_dataset

        return task_dataset.preprocessed_arrays(self.preprocessor, x, y,
                                                sample_weight, trim=trim)
