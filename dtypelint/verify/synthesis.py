"""Build a flagged module from its ``__init__`` signature (or a config object).

In order: a factory named in ``[tool.dtypelint.verify] harness``; a config object when the
``__init__`` takes one (``config``) -- a tiny instance of the project's config class when
there is one (its defaults, with the size attributes shrunk), else a namespace holding the
attributes the file reads from it; or the signature itself (defaults kept, small consistent
values for size names, guesses by name for the rest).  When nothing sensible can be guessed
the reason is raised as :class:`NotBuildable`, never a silent guess.
"""

from __future__ import annotations

import ast
import inspect
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from dtypelint.verify import sizes

CONFIG_NAMES = {"config", "cfg", "conf", "configuration", "model_config", "args", "hparams", "params", "model_args"}
ACTIVATION_NAMES = {"act", "activation", "act_fn", "activation_fn", "nonlinearity", "act_layer", "activation_layer",
                    "hidden_act", "activation_function", "non_linearity"}


class NotBuildable(Exception):
    """Why no harness could be synthesised (reported as ``not-run``)."""


@dataclass
class Construction:
    """How to construct the class: ``kwargs()`` builds fresh arguments (a fresh config) each time."""

    kwargs: Callable[[], dict]
    description: str
    values: dict[str, Any] = field(default_factory=dict)  # the size values used (for input shapes)
    variants: list[tuple[str, Callable[[], dict]]] = field(default_factory=list)  # tried when kwargs() fails

    def attempts(self) -> list[tuple[str, Callable[[], dict]]]:
        return [(self.description, self.kwargs), *self.variants]


def _params(fn) -> list[inspect.Parameter]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise NotBuildable(f"cannot read the signature of {getattr(fn, '__qualname__', fn)}: {exc}") from None
    return [p for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _annotation_text(p: inspect.Parameter) -> str:
    ann = p.annotation
    if ann is inspect.Parameter.empty:
        return ""
    return ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))


def _resolve_annotation(p: inspect.Parameter, namespace: dict):
    ann = p.annotation
    if isinstance(ann, str):
        try:
            ann = eval(ann, dict(namespace))  # noqa: S307 - annotations of the project's own code
        except Exception:
            return None
    return ann if isinstance(ann, type) else None


# -- config objects ----------------------------------------------------------------------------


def _looks_like_config_class(obj) -> bool:
    return isinstance(obj, type) and obj.__name__.endswith(("Config", "Configuration")) and not obj.__name__.startswith("_")


def find_config_class(cls, param: inspect.Parameter, namespace: dict):
    """The config class a module takes: the annotation, ``config_class``, or the project's config class
    whose name shares the longest prefix with the module's."""
    ann = _resolve_annotation(param, namespace)
    if ann is not None and _looks_like_config_class(ann):
        return ann
    declared = getattr(cls, "config_class", None)
    if _looks_like_config_class(declared):
        return declared
    candidates = [v for v in namespace.values() if _looks_like_config_class(v)
                  and not v.__module__.startswith(("torch", "typing", "dataclasses"))]
    base_names = {"PretrainedConfig", "PreTrainedConfig"}
    candidates = [c for c in candidates if c.__name__ not in base_names]
    if not candidates:
        return None

    def shared(c) -> int:
        a, b = c.__name__.lower(), cls.__name__.lower()
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    return max(candidates, key=shared)


def _is_config_instance(value) -> bool:
    return _looks_like_config_class(type(value)) and hasattr(value, "to_dict")


def _shrink_instance(cfg, depth: int = 0) -> None:
    """Shrink the size attributes of a built config (and of its sub-configs) in place."""
    for name, value in list(vars(cfg).items()):
        if _is_config_instance(value) and depth < 3:
            _shrink_instance(value, depth + 1)
            continue
        new = sizes.shrink_attribute(name, value)
        if new is not value and new != value:
            try:
                setattr(cfg, name, new)
            except Exception:
                pass


def tiny_config(config_cls):
    """An instance of ``config_cls`` with small sizes, or raise NotBuildable."""
    overrides: dict[str, Any] = {}
    accepts_any = False
    try:
        sig = inspect.signature(config_cls.__init__)
        for p in sig.parameters.values():
            if p.kind == p.VAR_KEYWORD:
                accepts_any = True
                continue
            if p.name == "self" or p.kind == p.VAR_POSITIONAL:
                continue
            role = sizes.role_of(p.name)
            if role is None:
                continue
            if p.default is None and role in ("kv_heads", "head_dim"):
                overrides[p.name] = sizes.VALUES[role]
            elif p.default is p.empty:
                overrides[p.name] = sizes.VALUES[role]
            else:
                new = sizes.shrink(p.name, p.default)
                if new != p.default:
                    overrides[p.name] = new
    except (TypeError, ValueError):
        accepts_any = True
    if accepts_any and not overrides:
        overrides = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
                     "num_hidden_layers": 2, "vocab_size": 128, "max_position_embeddings": 64}
    errors = []
    for attempt in (overrides, {k: v for k, v in overrides.items() if sizes.role_of(k) in ("width", "heads", "layers")}, {}):
        try:
            cfg = config_cls(**attempt)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            continue
        _shrink_instance(cfg)
        return cfg
    raise NotBuildable(f"cannot build a small {config_cls.__name__}: {errors[0][:200]}")


def _attributes_read(source: str, names: set[str]) -> dict[str, Any]:
    """``config.X`` / ``self.config.X`` / ``getattr(config, "X", default)`` in a file -> {X: default or ...}."""
    out: dict[str, Any] = {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id in names:
                out.setdefault(node.attr, ...)
            elif isinstance(base, ast.Attribute) and base.attr in names and isinstance(base.value, ast.Name):
                out.setdefault(node.attr, ...)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            obj = node.args[0]
            named = (isinstance(obj, ast.Name) and obj.id in names) or (isinstance(obj, ast.Attribute) and obj.attr in names)
            if named:
                default = ...
                if len(node.args) > 2 and isinstance(node.args[2], ast.Constant):
                    default = node.args[2].value
                out[node.args[1].value] = default
    return out


def namespace_config(source: str, param_name: str) -> types.SimpleNamespace:
    """A namespace with the attributes the file reads off the config, each with a guessed value."""
    attrs = _attributes_read(source, {param_name, "config", "cfg"})
    values = {}
    for name, default in attrs.items():
        if default is not ...:
            values[name] = sizes.shrink(name, default)
            continue
        small = sizes.value_of(name)
        if small is not None:
            values[name] = small
        elif name in ACTIVATION_NAMES or name.endswith("_act"):
            values[name] = "gelu"
        else:
            try:
                values[name] = sizes.guess_scalar(name)
            except LookupError:
                values[name] = None
    return types.SimpleNamespace(**values)


# -- constructor arguments ---------------------------------------------------------------------


def _activation(name: str, torch):
    if name.endswith("_layer"):
        return torch.nn.GELU
    return torch.nn.GELU()


def construction(cls, namespace: dict, source: str, torch) -> Construction:
    """How to construct ``cls`` (raises NotBuildable with the reason)."""
    try:
        params = _params(cls.__init__)
    except NotBuildable:
        params = []
    fixed: dict[str, Any] = {}
    lazy: dict[str, Callable[[], Any]] = {}
    described: list[str] = []
    values: dict[str, Any] = {}
    sub_configs: list[tuple[str, str, type]] = []  # (parameter, attribute, config class): composite configs
    none_sizes: dict[str, int] = {}  # size parameters whose default is None
    for p in params:
        name, has_default = p.name, p.default is not p.empty
        if name.lower() in CONFIG_NAMES and (not has_default or p.default is None):
            config_cls = find_config_class(cls, p, namespace)
            if config_cls is not None:
                tiny_config(config_cls)  # fail now, with the reason, rather than at every run
                lazy[name] = (lambda c=config_cls: tiny_config(c))
                described.append(f"{name}=tiny {config_cls.__name__}")
                sample = tiny_config(config_cls)
                values.update({k: v for k, v in vars(sample).items() if isinstance(v, int) and sizes.role_of(k)})
                sub_configs += [(name, attr, config_cls) for attr, v in vars(sample).items() if _is_config_instance(v)]
            else:
                ns = namespace_config(source, name)
                if not vars(ns):
                    raise NotBuildable(f"{cls.__name__}.__init__ takes `{name}` but the file reads no attribute "
                                       "of it and no config class was found")
                lazy[name] = (lambda s=source, n=name: namespace_config(s, n))
                described.append(f"{name}=namespace({', '.join(sorted(vars(ns)))[:80]})")
                values.update({k: v for k, v in vars(ns).items() if isinstance(v, int) and sizes.role_of(k)})
            continue
        if has_default:
            if p.default is None and sizes.role_of(name):
                none_sizes[name] = sizes.VALUES[sizes.role_of(name)]
            value = sizes.shrink(name, p.default)
            if value is not p.default and value != p.default:
                fixed[name] = value
                described.append(f"{name}={value}")
            if isinstance(value, int) and not isinstance(value, bool) and sizes.role_of(name):
                values[name] = value
            continue
        small = sizes.value_of(name)
        if small is not None:
            fixed[name] = small
            values[name] = small
            described.append(f"{name}={small}")
            continue
        if name.lower() in ACTIVATION_NAMES:
            if name.lower() == "hidden_act" or "str" in _annotation_text(p):
                fixed[name] = "gelu"
            else:
                lazy[name] = (lambda n=name: _activation(n, torch))
            described.append(f"{name}=GELU")
            continue
        if name.lower() in ("norm_layer", "norm_cls"):
            fixed[name] = torch.nn.LayerNorm
            described.append(f"{name}=LayerNorm")
            continue
        try:
            fixed[name] = sizes.guess_scalar(name, _annotation_text(p))
            described.append(f"{name}={fixed[name]!r}")
        except LookupError:
            ann = _annotation_text(p)
            raise NotBuildable(f"cannot guess the required argument `{name}`{f' ({ann})' if ann else ''} of "
                               f"{cls.__name__}.__init__; name a harness factory in [tool.dtypelint.verify]") from None

    def kwargs() -> dict:
        return {**fixed, **{k: make() for k, make in lazy.items()}}

    variants: list[tuple[str, Callable[[], dict]]] = []
    for param, attr, config_cls in sub_configs:  # a module of a composite model takes one of its sub-configs
        def sub(param=param, attr=attr, config_cls=config_cls) -> dict:
            return {**kwargs(), param: getattr(tiny_config(config_cls), attr)}
        variants.append((f"{cls.__name__}({param}=tiny {config_cls.__name__}.{attr})", sub))
    if none_sizes:  # a size defaulting to None that the code uses as a number
        variants.append((f"{cls.__name__}({', '.join([*described, *(f'{k}={v}' for k, v in none_sizes.items())])})",
                         lambda: {**kwargs(), **none_sizes}))
    return Construction(kwargs, f"{cls.__name__}({', '.join(described)})", values, variants)
