"""DTL204: binary cross-entropy on probabilities inside CUDA autocast (raises: it is on autocast's ban list)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

criterion = nn.BCELoss(reduction="mean")


class Discriminator(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim), nn.LeakyReLU(0.2), nn.Linear(dim, 1))
        self.adv_loss = nn.BCELoss()

    def forward(self, x):
        return torch.sigmoid(self.net(x))

    def loss(self, real, fake):
        with torch.autocast(device_type=real.device.type, dtype=torch.float16):
            p_real = self(real)
            p_fake = self(fake.detach())
            ones = torch.ones_like(p_real)
            return self.adv_loss(p_real, ones) + self.adv_loss(p_fake, torch.zeros_like(p_fake))  # expect: DTL204


def multilabel_step(model, x, targets, class_weight):
    with torch.amp.autocast("cuda"):  # expect: DTL201
        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(  # expect: DTL204
            logits,
            targets,
            weight=class_weight,
        )
    return loss


def mask_step(model, image, mask):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        pred = model(image).sigmoid()
        return criterion(pred, mask)  # expect: DTL204
