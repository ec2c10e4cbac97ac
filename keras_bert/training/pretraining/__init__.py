"""A pretraining run from raw text: settings, corpus, pair pipeline, the
job, its checkpoints, logs and held-out report (TensorFlow data code).

The public names are importable from `keras_bert.training`.
"""
