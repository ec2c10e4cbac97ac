import keras
import numpy as np

from keras_bert.optimizers.warmup_linear_decay import WarmupLinearDecay
from tests.test_case import TestCase


class WarmupLinearDecayTest(TestCase):
    def test_values_follow_warmup_then_linear_decay(self):
        schedule = WarmupLinearDecay(2e-3, total_steps=110, warmup_steps=10,
                                     end_learning_rate=1e-4)
        steps = [0, 1, 5, 10, 60, 110, 500]
        # Closed form: rising line to the peak, then a line from the peak
        # at step 10 to the end rate at step 110.
        expected = [0.0, 2e-4, 1e-3, 2e-3, 2e-3 - 0.5 * (2e-3 - 1e-4),
                    1e-4, 1e-4]
        actual = [float(keras.ops.convert_to_numpy(schedule(s)))
                  for s in steps]
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-9)

    def test_no_warmup_starts_at_peak(self):
        schedule = WarmupLinearDecay(1.0, total_steps=4)
        actual = [float(keras.ops.convert_to_numpy(schedule(s)))
                  for s in range(5)]
        np.testing.assert_allclose(actual, [1.0, 0.75, 0.5, 0.25, 0.0],
                                   atol=1e-7)

    def test_serialization_round_trip(self):
        schedule = WarmupLinearDecay(1e-4, total_steps=1000, warmup_steps=10)
        config = keras.optimizers.schedules.serialize(schedule)
        revived = keras.optimizers.schedules.deserialize(config)
        self.assertIsInstance(revived, WarmupLinearDecay)
        self.assertEqual(revived.get_config(), schedule.get_config())

    def test_bad_arguments_name_the_values(self):
        with self.assertRaisesRegex(ValueError, "warmup_steps=20"):
            WarmupLinearDecay(1e-4, total_steps=10, warmup_steps=20)
