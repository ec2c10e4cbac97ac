"""The backbone's forward pass, written once.

`BertBackbone` runs it on symbolic inputs to build its Functional graph,
and on PyTorch runs it eagerly in place of that graph (`direct_forward`);
`shared_rows` runs it eagerly with per-text positions and a block
attention mask, inputs the graph does not take. One function keeps them
the same model.
"""

import keras
import numpy as np

from keras_bert import fused_ops
from keras_bert._compat.sublayer_call import call_sublayer
from keras_bert.packed_inputs import PACKED_INPUTS


def run_encoder(backbone_layers, token_ids, segment_ids, padding_mask=None,
                position_ids=None, attention_mask=None,
                return_attention_scores=False, training=None):
    """Embeddings, the Transformer blocks, then the final LayerNorm.

    Args:
        backbone_layers: tuple `(embeddings, blocks, final_layer_norm)`;
            `final_layer_norm` is None for a post-norm model.
        token_ids, segment_ids: int tensors `(batch, length)`.
        padding_mask: `(batch, length)`, 1 for real tokens, or None.
        position_ids: `(batch, length)` or None (0, 1, ... per row).
        attention_mask: bool `(batch, queries, keys)` or None.
        return_attention_scores: bool. Also collect each block's
            attention probabilities.
        training: bool or None, for dropout.

    Returns:
        `(sequence_output, hidden_states, attentions)`: the last tensor,
        the embeddings and each block's output before the final
        LayerNorm (`num_layers + 1` tensors), and the attention
        probabilities (empty unless `return_attention_scores`).
    """
    embeddings, blocks, final_layer_norm = backbone_layers
    # `call_sublayer`: Keras' call on symbolic inputs and on every backend
    # but PyTorch, the layer's own inside a PyTorch forward.
    x = call_sublayer(embeddings, token_ids, segment_ids=segment_ids,
                      position_ids=position_ids, training=training)
    hidden_states, attentions = [x], []
    for block in blocks:
        x = call_sublayer(block, x, padding_mask=padding_mask,
                          attention_mask=attention_mask,
                          return_attention_scores=return_attention_scores,
                          training=training)
        if return_attention_scores:
            x, scores = x
            attentions.append(scores)
        hidden_states.append(x)
    if final_layer_norm is not None:
        x = call_sublayer(final_layer_norm, x)
    return x, hidden_states, attentions


def backbone_outputs(backbone_layers, pooler, inputs, output_hidden_states,
                     output_attentions, training=None):
    """The backbone's outputs dict for `inputs` (the packed inputs).

    Args:
        backbone_layers: as for `run_encoder`.
        pooler: the `Dense` layer on the `[CLS]` vector.
        inputs: dict with `token_ids`, `segment_ids` and `padding_mask`.
        output_hidden_states, output_attentions: bool. Add the
            `hidden_states` and `attentions` lists.
        training: bool or None, for dropout.
    """
    x, hidden_states, attentions = run_encoder(
        backbone_layers, inputs["token_ids"], inputs["segment_ids"],
        padding_mask=inputs["padding_mask"],
        return_attention_scores=output_attentions, training=training)
    outputs = {
        "sequence_output": x,
        "pooled_output": call_sublayer(pooler, x[:, 0, :]),
    }
    if output_hidden_states:
        outputs["hidden_states"] = hidden_states
    if output_attentions:
        outputs["attentions"] = attentions
    return outputs


def runs_direct_forward(inputs, mask, kwargs):
    """Whether a backbone's call on `inputs` takes `direct_forward`: on
    PyTorch, for the packed inputs as 2-D tensors or NumPy arrays and
    nothing else.

    PyTorch runs a forward eagerly, and a Functional model's call walks
    its graph with Keras' per-call work around every layer in it (input
    conversion, argument binding, dtype and name scopes, structure
    flattening): Python between the kernels on every call. The other
    backends trace the graph once per compiled program, where that work
    costs nothing per call.
    """
    # Keras passes `mask` as one None per input when no input has a mask.
    return (keras.config.backend() == "torch"
            and all(leaf is None for leaf in keras.tree.flatten(mask))
            and not kwargs and isinstance(inputs, dict)
            and sorted(inputs) == sorted(PACKED_INPUTS)
            and all((keras.ops.is_tensor(value)
                     or isinstance(value, np.ndarray))  # `predict_on_batch`
                    and len(value.shape) == 2 for value in inputs.values()))


def direct_forward(backbone, inputs, training=None):
    """`backbone`'s Functional graph run as the code that built it: the
    same layers, weights and arithmetic, in the same order, except that a
    padding mask of ones, which changes no attention weight, is dropped
    (`fused_ops.padding_mask_or_none`)."""
    # As the Functional model converts its inputs to the `keras.Input`s'.
    inputs = {name: keras.ops.convert_to_tensor(value, "int32")
              for name, value in inputs.items()}
    inputs["padding_mask"] = fused_ops.padding_mask_or_none(
        inputs["padding_mask"])
    return backbone_outputs(
        (backbone.embeddings, backbone.transformer_layers,
         backbone.final_layer_norm), backbone.pooler, inputs,
        backbone.output_hidden_states, backbone.output_attentions,
        training=training)
