import keras

from keras_bert.layers.fused_query_key_value import read_flat_moments
from keras_bert.serialization import deserialize


class Task(keras.Model):
    """Base for task models: a `BertBackbone`, a head, an optional preprocessor.

    Subclasses build a Functional model on `backbone.input` and call
    `Task.__init__` with it. This base gives every task the same
    serialization (`get_config` stores the backbone and preprocessor as
    nested Keras objects), `from_preset` and `save_to_preset`.
    """

    def __init__(self, *args, backbone=None, preprocessor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor

    def load_own_variables(self, store):
        super().load_own_variables(store)
        # Keras loads the optimizer next (when this is the model loaded).
        read_flat_moments(getattr(self, "optimizer", None))

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
        for key in ("backbone", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = deserialize(config[key])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Builds the task on a backbone loaded from a preset or directory.

        Heads stored with the checkpoint (e.g. the MLM/NSP heads, or a
        fine-tuned classifier) are loaded too when the directory has them.
        """
        from keras_bert.checkpoints import load_task

        return load_task(cls, preset, load_weights=load_weights, **kwargs)

    def save_to_preset(self, preset_dir):
        """Writes a keras_bert preset directory (config, weights, vocab)."""
        from keras_bert.checkpoints import save_to_preset

        save_to_preset(self, preset_dir)
