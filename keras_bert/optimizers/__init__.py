"""BERT's optimizers and learning-rate schedules (Keras only).

AdamW with PyTorch's epsilon placement, the warmup-then-linear-decay
schedule, and the paper's pretraining and fine-tuning recipes built on
them. The task models compile with these, so this package sits below
`keras_bert.models` and imports nothing else of keras_bert.
"""

from keras_bert.optimizers.adamw import AdamW
from keras_bert.optimizers.bert_optimizer import create_optimizer
from keras_bert.optimizers.bert_optimizer import resize_schedule
from keras_bert.optimizers.finetune_recipe import finetune_optimizer
from keras_bert.optimizers.warmup_linear_decay import WarmupLinearDecay
