"""Pictures of what a trained BERT does: attention maps (needs matplotlib)."""

from keras_bert.visualization.plot_attention import attention_map
from keras_bert.visualization.plot_attention import plot_attention
