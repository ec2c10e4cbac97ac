"""Adam's moment variables, and the step Keras applies to all variables.

Keras' Adam and AdamW keep each variable's moments in the private lists
`_momentums` and `_velocities` (`_velocity_hats` with amsgrad), at the
private `_get_variable_index` of the variable, and apply a training step
in the private `Optimizer._backend_update_step`, which calls the public
`update_step` once per variable. Checked on Keras 3.13.0 (the floor)
and 3.15.1; present since 3.10.0.
"""


def adam_moments(optimizer, variable):
    """`(first, second, peak)`: the moment variables a Keras Adam or AdamW
    `optimizer` keeps for `variable` (`peak`, the running maximum of the
    second, is None without amsgrad); None where Keras keeps them
    elsewhere (the caller's fallback)."""
    try:
        slot = optimizer._get_variable_index(variable)
        first, second = optimizer._momentums[slot], optimizer._velocities[slot]
    except (AttributeError, IndexError, KeyError):
        return None
    peak = optimizer._velocity_hats[slot] if optimizer.amsgrad else None
    return first, second, peak


class WholeStepUpdate:
    """Mixin for a Keras optimizer: a training step first goes to the
    class's `_update_all_at_once(grads, variables, learning_rate)`, which
    updates every variable and returns True, or returns False to leave
    the step to Keras (`update_step` per variable).

    Fallback, where Keras no longer steps through `_backend_update_step`:
    Keras' per-variable `update_step` (the same update, slower where
    nothing compiles it).
    """

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if not self._update_all_at_once(grads, trainable_variables,
                                        learning_rate):
            super()._backend_update_step(grads, trainable_variables,
                                         learning_rate)
