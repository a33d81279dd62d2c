"""DTL105 (`x[mask] = v`): image features written into the token embeddings through a comparison mask.

Under `autocast` the embedding table's parameters stay float32, so `inputs_embeds` is float32, while the
projector is a linear layer, which autocast runs in float16.  `inputs_embeds[mask] = image_embeds` with a
boolean mask is `index_put_`, which autocast does not cast: it raises "Index put requires the source and
destination dtypes match".  The same merge written with a mask built on an earlier line, and combined with a
padding mask, fails the same way.
"""
import torch
import torch.nn as nn


class ImageTextMerger(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=32, vision_size=24, image_token_id=99):
        super().__init__()
        self.image_token_id = image_token_id
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.projector = nn.Linear(vision_size, hidden_size)

    def forward(self, input_ids, image_features):
        inputs_embeds = self.embed_tokens(input_ids)
        image_embeds = self.projector(image_features).reshape(-1, inputs_embeds.shape[-1])
        inputs_embeds[input_ids == self.image_token_id] = image_embeds.to(inputs_embeds.dtype)  # expect: DTL105
        return inputs_embeds


class MaskedImageTextMerger(ImageTextMerger):
    def forward(self, input_ids, image_features):
        keep = torch.ones_like(input_ids, dtype=torch.bool)
        inputs_embeds = self.embed_tokens(input_ids)
        image_mask = (input_ids == self.image_token_id) & keep
        image_embeds = self.projector(image_features).flatten(0, 1)
        inputs_embeds[image_mask] = image_embeds.to(inputs_embeds.dtype)  # expect: DTL105
        return inputs_embeds
