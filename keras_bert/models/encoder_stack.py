"""The backbone's forward pass, written once.

`BertBackbone` runs it on symbolic inputs to build its Functional graph;
`shared_rows` runs it eagerly with per-text positions and a block
attention mask, inputs the graph does not take. One function keeps the
two the same model.
"""


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
    x = embeddings(token_ids, segment_ids, position_ids=position_ids,
                   training=training)
    hidden_states, attentions = [x], []
    for block in blocks:
        x = block(x, padding_mask=padding_mask, attention_mask=attention_mask,
                  return_attention_scores=return_attention_scores,
                  training=training)
        if return_attention_scores:
            x, scores = x
            attentions.append(scores)
        hidden_states.append(x)
    if final_layer_norm is not None:
        x = final_layer_norm(x)
    return x, hidden_states, attentions
