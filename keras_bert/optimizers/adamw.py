"""AdamW with PyTorch's placement of epsilon."""

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamW(keras.optimizers.AdamW):
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
    the same.

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
        dtype = variable.dtype
        gradient = ops.cast(gradient, dtype)
        t = ops.cast(self.iterations + 1, dtype)
        beta_1 = ops.cast(self.beta_1, dtype)
        beta_2 = ops.cast(self.beta_2, dtype)

        slot = self._get_variable_index(variable)
        first, second = self._momentums[slot], self._velocities[slot]
        # Exponential moving averages of the gradient and its square.
        self.assign(first, beta_1 * first + (1 - beta_1) * gradient)
        self.assign(second, beta_2 * second
                    + (1 - beta_2) * ops.square(gradient))
        if self.amsgrad:
            peak = self._velocity_hats[slot]
            self.assign(peak, ops.maximum(peak, second))
            second = peak
        first_hat = first / (1 - ops.power(beta_1, t))
        second_hat = second / (1 - ops.power(beta_2, t))
        step = ops.cast(learning_rate, dtype) * first_hat / (
            ops.sqrt(second_hat) + self.epsilon)
        self.assign_sub(variable, step)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        # Keras runs `update_step` once per variable. Under XLA (JAX,
        # TensorFlow) its ops fuse into one pass; PyTorch runs eagerly, one
        # kernel and one temporary per op: about 17 passes over every
        # weight, the embedding matrix included, which made the optimizer
        # 119 ms of a 650 ms BERT mini fine-tuning step (docs/performance.md,
        # "Training step"). PyTorch's multi-tensor kernels take the same
        # step in 8 passes: 44-51 ms, level with `torch.optim.AdamW`.
        if keras.config.backend() == "torch" and not self.amsgrad:
            self._torch_update_step(grads, trainable_variables, learning_rate)
        else:
            super()._backend_update_step(grads, trainable_variables,
                                         learning_rate)

    def _torch_update_step(self, grads, trainable_variables, learning_rate):
        # Only reached under the torch backend: JAX and TensorFlow users
        # need not have torch installed.
        import torch

        slots = [self._get_variable_index(v) for v in trainable_variables]
        variables = [v.value for v in trainable_variables]
        first = [self._momentums[i].value for i in slots]
        second = [self._velocities[i].value for i in slots]
        dtype = variables[0].dtype
        grads = [g.to(dtype) for g in grads]
        # 0-d tensors, not Python floats: no device sync, and a compiled
        # train step (`jit_compile=True`) stays one graph.
        t = ops.cast(self.iterations + 1, dtype)
        step_size = ops.cast(learning_rate, dtype) / (1 - self.beta_1**t)
        correction = 1 / ops.sqrt(1 - self.beta_2**t)
        with torch.no_grad():
            torch._foreach_lerp_(first, grads, 1 - self.beta_1)
            torch._foreach_mul_(second, self.beta_2)
            torch._foreach_addcmul_(second, grads, grads,
                                    value=1 - self.beta_2)
            # (sqrt(v_hat) + epsilon) / lr_hat, so that one fused kernel
            # subtracts m over it.
            denominator = torch._foreach_sqrt(second)
            torch._foreach_mul_(denominator, correction)
            torch._foreach_add_(denominator, self.epsilon)
            torch._foreach_div_(denominator, step_size)
            torch._foreach_addcdiv_(variables, first, denominator, value=-1)

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
