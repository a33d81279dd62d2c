"""Regression (SLANeXt shape): a float32 state is fed to a cell kept in float32 inside a decode loop;
the cell returns something the analysis cannot follow (a GRU cell), so the state becomes unknown in
the second iteration and must stay unknown (not be replaced by the activation assumption): quiet when loaded.
In the half regime `.half()` converts the kept cell too, which really breaks (expected findings)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttentionGRUCell(nn.Module):
    def __init__(self, input_size, hidden_size, num_embeddings):
        super().__init__()
        self.input_to_hidden = nn.Linear(input_size, hidden_size, bias=False)
        self.hidden_to_hidden = nn.Linear(hidden_size, hidden_size)
        self.score = nn.Linear(hidden_size, 1, bias=False)
        self.rnn = nn.GRUCell(input_size + num_embeddings, hidden_size)

    def forward(self, prev_hidden, batch_hidden, char_onehots):
        scores = self.input_to_hidden(batch_hidden) + self.hidden_to_hidden(prev_hidden).unsqueeze(1)  # expect: DTL101
        weights = F.softmax(self.score(torch.tanh(scores)), dim=1, dtype=torch.float32).to(scores.dtype)
        context = torch.matmul(weights.transpose(1, 2), batch_hidden).squeeze(1)  # expect: DTL101
        return self.rnn(torch.cat([context, char_onehots], 1), prev_hidden)


class TableHead(nn.Module):
    def __init__(self, hidden_size, out_channels, max_len=16):
        super().__init__()
        self.hidden_size = hidden_size
        self.out_channels = out_channels
        self.max_len = max_len
        self.cell = AttentionGRUCell(hidden_size, hidden_size, out_channels)
        self.generator = nn.Linear(hidden_size, out_channels)

    def forward(self, hidden_states):
        features = torch.zeros(hidden_states.shape[0], self.hidden_size, dtype=torch.float32)
        chars = torch.zeros(hidden_states.shape[0], dtype=torch.long)
        for _ in range(self.max_len):
            onehot = F.one_hot(chars, self.out_channels).float()
            features = self.cell(features, hidden_states.float(), onehot)
            chars = self.generator(features).argmax(dim=1)
        return chars


class TableModel(nn.Module):
    _keep_in_fp32_modules_strict = ["cell", "generator"]

    def __init__(self, hidden_size=32, out_channels=8):
        super().__init__()
        self.head = TableHead(hidden_size, out_channels)

    def forward(self, hidden_states):
        return self.head(hidden_states)
