"""AdamW with PyTorch's placement of epsilon."""

import keras
import numpy as np
from keras import ops

from keras_bert._compat.optimizer_state import WholeStepUpdate
from keras_bert._compat.optimizer_state import adam_moments
from keras_bert._compat.torch_ops import foreach


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamW(WholeStepUpdate, keras.optimizers.AdamW):
    """AdamW with epsilon added after the bias correction (PyTorch's form).

    `keras.optimizers.AdamW` adds epsilon to the *uncorrected* `sqrt(v)`,
    which early in training is `sqrt(1 - beta_2^t)` times the corrected
    one. Measured against the corrected moment, its epsilon is therefore
    `1 / sqrt(1 - beta_2^t)` times larger: 32x at step 1, 7x at step 20,
    4x at step 63 (beta_2 0.999). With epsilon 1e-6 and clipped BERT
    gradients (most entries under 1e-4) that slows the encoder of a short
    fine-tuning run to about half of what `transformers` trains with
    `torch.optim.AdamW` (docs/finetuning.md, CoNLL-2003). This class takes
    the step of Kingma & Ba's Algorithm 1, as PyTorch and optax do:
    `lr * m_hat / (sqrt(v_hat) + epsilon)` with
    `m_hat = m / (1 - beta_1^t)` and `v_hat = v / (1 - beta_2^t)`.

    Everything else (decoupled weight decay and its exclusions, clipping,
    schedules, `amsgrad`) is Keras' `AdamW`; the constructor arguments are
    the same. (Should a Keras release keep Adam's moments where
    `keras_bert._compat.optimizer_state` cannot find them, the step is
    Keras' own.)

    Example:
    >>> optimizer = AdamW(learning_rate=1e-3, weight_decay=0.0, epsilon=1e-6)
    >>> variable = keras.Variable([1.0])
    >>> _ = optimizer.apply_gradients([(keras.ops.convert_to_tensor([1e-7]),
    ...                                 variable)])
    >>> round(float(variable[0]), 6)  # keras.optimizers.AdamW: 0.999997
    0.999909
    """

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        super().exclude_from_weight_decay(var_list=var_list,
                                          var_names=var_names)
        # Keras' config leaves the exclusions out, so a model loaded from a
        # `.keras` file decayed its LayerNorm weights and biases; the names
        # travel in `get_config` (variables cannot: the task adds its
        # `unread_weights()` again on load).
        self.excluded_names = list(var_names or ())

    def get_config(self):
        config = super().get_config()
        if getattr(self, "excluded_names", None):
            config["exclude_from_weight_decay_names"] = self.excluded_names
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        names = config.pop("exclude_from_weight_decay_names", None)
        optimizer = super().from_config(config, custom_objects=custom_objects)
        if names:
            optimizer.exclude_from_weight_decay(var_names=names)
        return optimizer

    def update_step(self, gradient, variable, learning_rate):
        moments = adam_moments(self, variable)
        if moments is None:
            return super().update_step(gradient, variable, learning_rate)
        first, second, peak = moments
        dtype = variable.dtype
        gradient = ops.cast(gradient, dtype)
        t = ops.cast(self.iterations + 1, dtype)
        beta_1 = ops.cast(self.beta_1, dtype)
        beta_2 = ops.cast(self.beta_2, dtype)

        # Exponential moving averages of the gradient and its square.
        self.assign(first, beta_1 * first + (1 - beta_1) * gradient)
        self.assign(second, beta_2 * second
                    + (1 - beta_2) * ops.square(gradient))
        if self.amsgrad:
            self.assign(peak, ops.maximum(peak, second))
            second = peak
        first_hat = first / (1 - ops.power(beta_1, t))
        second_hat = second / (1 - ops.power(beta_2, t))
        step = ops.cast(learning_rate, dtype) * first_hat / (
            ops.sqrt(second_hat) + self.epsilon)
        self.assign_sub(variable, step)

    def _update_all_at_once(self, grads, trainable_variables,
                            learning_rate):
        # Keras runs `update_step` once per variable. Under XLA (JAX,
        # TensorFlow) its ops fuse into one pass; PyTorch runs eagerly, one
        # kernel and one temporary per op: about 17 passes over every
        # weight, the embedding matrix included. PyTorch's multi-tensor
        # kernels take the same step in 8 passes, as `torch.optim.AdamW`
        # does (docs/performance.md, "Training step").
        if keras.config.backend() != "torch" or self.amsgrad:
            return False
        moments = [adam_moments(self, v) for v in trainable_variables]
        if any(m is None for m in moments):
            return False
        # Only reached under the torch backend: JAX and TensorFlow users
        # need not have torch installed.
        import torch

        variables = [v.value for v in trainable_variables]
        first = [m[0].value for m in moments]
        second = [m[1].value for m in moments]
        dtype = variables[0].dtype
        grads = [g.to(dtype) for g in grads]
        # 0-d tensors, not Python floats: no device sync, and a compiled
        # train step (`jit_compile=True`) stays one graph.
        t = ops.cast(self.iterations + 1, dtype)
        step_size = ops.cast(learning_rate, dtype) / (1 - self.beta_1**t)
        correction = 1 / ops.sqrt(1 - self.beta_2**t)
        with torch.no_grad():
            foreach("lerp_")(first, grads, 1 - self.beta_1)
            foreach("mul_")(second, self.beta_2)
            foreach("addcmul_")(second, grads, grads, value=1 - self.beta_2)
            # (sqrt(v_hat) + epsilon) / lr_hat, so that one fused kernel
            # subtracts m over it.
            denominator = foreach("sqrt")(second)
            foreach("mul_")(denominator, correction)
            foreach("add_")(denominator, self.epsilon)
            foreach("div_")(denominator, step_size)
            foreach("addcdiv_")(variables, first, denominator, value=-1)
        return True

    def load_own_variables(self, store):
        # A task is compiled on construction, so one saved before its first
        # step stores an unbuilt optimizer (its step counter only) while the
        # loaded task builds one; the moments it lacks are zeros, which the
        # fresh build holds already. Keras would warn and load nothing.
        saved = len(store.keys())
        if (self.built and saved < len(self.variables)
                and int(np.asarray(store["0"])) == 0):
            for i in range(saved):
                self.variables[i].assign(store[str(i)])
            return
        super().load_own_variables(store)
