"""Pretrained-model base class of a cross-file package: declares the fp32-kept modules."""
import torch
import torch.nn as nn


class PreTrainedSeq2Seq(nn.Module):
    _keep_in_fp32_modules = ["wo"]
    _no_split_modules = ["Block"]

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=0.02)


def residual_add(residual, update):
    return residual + update
