"""Detection head with per-task heads in an `nn.ModuleDict`, one of them built in float32.

Breaks in the `loaded` regime: the objectness head is built with `dtype=torch.float32` ("calibrated
scores"), so a float16 load keeps it float32 while the shared features are float16, and
`self.heads["objectness"](feats)` raises (mixed-dtype linear). `.half()` converts the head too, and
under autocast the linear casts its input. The other heads share the features' dtype.
"""
import torch
import torch.nn as nn


class MultiTaskDetectionHead(nn.Module):
    def __init__(self, in_dim, hidden_dim=64, num_classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.ReLU(), nn.LayerNorm(hidden_dim))
        self.heads = nn.ModuleDict({
            "classes": nn.Linear(hidden_dim, num_classes),
            "boxes": nn.Linear(hidden_dim, 4),
            "objectness": nn.Linear(hidden_dim, 1, dtype=torch.float32),
        })

    def forward(self, queries):
        feats = self.stem(queries)
        class_logits = self.heads["classes"](feats)
        boxes = self.heads["boxes"](feats).sigmoid()
        objectness = self.heads["objectness"](feats.to(self.heads['objectness'].weight.dtype))  # expect: DTL101
        scores = class_logits.softmax(dim=-1) * objectness.sigmoid().to(class_logits.dtype)
        return torch.cat([boxes, scores], dim=-1)


class QueryDecoderWithHeads(nn.Module):
    def __init__(self, dim=32, num_queries=8):
        super().__init__()
        self.query_embed = nn.Embedding(num_queries, dim)
        self.head = MultiTaskDetectionHead(dim)

    def forward(self, memory):
        queries = self.query_embed.weight[None].expand(memory.shape[0], -1, -1)
        queries = queries + memory.mean(dim=1, keepdim=True)
        return self.head(queries)
