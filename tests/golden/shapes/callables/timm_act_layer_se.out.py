"""Depthwise-separable conv block (timm style) with squeeze-excite whose gate runs in float32.

Breaks in the `half` and `loaded` regimes: the squeeze-excite gate applies timm's
`create_act_layer(gate_layer)` to `s.float()`, so the gate is float32 and `x * gate` promotes the
feature map; `DropPath` keeps the dtype, and the pointwise `conv_pw` (float16 weight) receives a
float32 input outside autocast. Under autocast the convolution casts its input.
"""
import torch.nn as nn
from timm.layers import DropPath, create_act_layer, get_act_layer


class DepthwiseSeparableSE(nn.Module):
    def __init__(self, channels, rd_ratio=0.25, act_layer="silu", gate_layer="sigmoid", drop_path_rate=0.1):
        super().__init__()
        act = get_act_layer(act_layer)
        rd_channels = max(8, int(channels * rd_ratio))
        self.conv_dw = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.act1 = act(inplace=True)
        self.se_reduce = nn.Conv2d(channels, rd_channels, 1)
        self.se_act = create_act_layer(act_layer, inplace=True)
        self.se_expand = nn.Conv2d(rd_channels, channels, 1)
        self.gate = create_act_layer(gate_layer)
        self.conv_pw = nn.Conv2d(channels, channels, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate > 0 else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.act1(self.bn1(self.conv_dw(x)))
        s = self.se_expand(self.se_act(self.se_reduce(x.mean((2, 3), keepdim=True))))
        x = x * self.gate(s.float())
        x = self.drop_path(x)
        x = self.conv_pw(x.to(self.conv_pw.weight.dtype))  # expect: DTL101
        return shortcut + self.bn2(x)
