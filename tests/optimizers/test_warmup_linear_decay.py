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

    def test_resize_changes_a_tracked_schedule_in_place(self):
        schedule = WarmupLinearDecay(1.0, total_steps=4)
        with self.assertRaisesRegex(ValueError, "track_in"):
            schedule.resize(8, 0)
        optimizer = keras.optimizers.SGD(learning_rate=schedule)
        schedule.track_in(optimizer)
        self.assertIn("schedule_lengths",
                      [v.name for v in optimizer.variables])
        schedule.resize(8, 2)
        actual = [float(keras.ops.convert_to_numpy(schedule(s)))
                  for s in (1, 2, 5, 8)]
        np.testing.assert_allclose(actual, [0.5, 1.0, 0.5, 0.0], atol=1e-7)
        self.assertEqual(schedule.get_config()["total_steps"], 8)
        with self.assertRaisesRegex(ValueError, "warmup_steps=9"):
            schedule.resize(8, 9)
