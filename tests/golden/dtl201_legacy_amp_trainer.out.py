"""DTL201: a trainer written against the torch.cuda.amp / torch.cpu.amp names (deprecated in torch 2.x)."""
import torch
import torch.cuda.amp as cuda_amp
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast, custom_bwd, custom_fwd


class ScaledSiLU(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)  # expect: DTL201
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return torch.nn.functional.silu(x) * scale

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")  # expect: DTL201
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * ctx.scale * (s * (1 + x * (1 - s))), None


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return ScaledSiLU.apply(self.proj(x), 0.5)


class Trainer:
    def __init__(self, model, optimizer, use_amp=True):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler("cuda", enabled=use_amp)  # expect: DTL201
        self.use_amp = use_amp

    def step(self, batch):
        with torch.amp.autocast("cuda", enabled=self.use_amp):  # expect: DTL201
            loss = self.model(batch).float().pow(2).mean()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    @torch.no_grad()
    def evaluate(self, batch, device):
        if device == "cpu":
            ctx = torch.amp.autocast("cpu", dtype=torch.bfloat16)  # expect: DTL201
        else:
            ctx = torch.amp.autocast(  # expect: DTL201
                "cuda", dtype=torch.float16,
            )
        with ctx:
            return self.model(batch).float().mean()


def legacy_scaler():
    return torch.amp.GradScaler(  # expect: DTL201
        "cuda", 2.0**12,
        growth_interval=500,
    )
