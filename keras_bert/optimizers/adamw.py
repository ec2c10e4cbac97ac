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
