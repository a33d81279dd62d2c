"""Path-sensitive analysis: values that differ by path, alternatives, conditions in the diagnostics."""
from analysis_helpers import lint_text

HEADER = "import functools\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def found(src, **kw):
    """(row relative to the snippet, code, regimes, condition) of each finding."""
    return sorted((d.start.row - 5, d.code, d.regimes, d.condition) for d in lint_text(HEADER + src, **kw))


ATTN = '''
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x, cache=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if cache is not None:
            k = torch.cat([cache, k], dim=1)
            v = torch.cat([cache, v], dim=1)
        else:
            k = k.float()
        return F.scaled_dot_product_attention(q, k, v)
'''


def test_a_sink_that_breaks_on_one_path_names_the_path():
    # the cache path gives unknown k/v (the cache is a parameter); the other path upcasts k only
    assert found(ATTN) == [(14, "DTL102", ("half", "loaded"), "`cache is None`")]


def test_correlated_branches_are_not_combined():
    src = '''
class Attn(nn.Module):
    def __init__(self, d, upcast=False):
        super().__init__()
        self.upcast = upcast
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if self.upcast:
            q, k = q.float(), k.float()
        attn = (q @ k.transpose(-2, -1)).softmax(-1)
        if self.upcast:
            v = v.float()
        return attn @ v
'''
    # both upcast together or neither does: no path mixes float32 attn with float16 v
    assert found(src) == []


def test_early_return_path_is_kept_apart():
    src = '''
def scale(scores, temperature=None):
    if temperature is None:
        return scores
    return scores.float() / temperature


class Head(nn.Module):
    def __init__(self, d, temperature=None):
        super().__init__()
        self.temperature = temperature
        self.q = nn.Linear(d, d)

    def forward(self, x, v):
        s = scale(self.q(x), self.temperature)
        return s @ v
'''
    [(row, code, regimes, cond)] = found(src)
    assert (row, code, regimes) == (16, "DTL101", ("half", "loaded"))
    assert "temperature is not None" in cond


def test_kernel_chosen_at_run_time_by_keyword():
    src = '''
def chunk_kernel(q, k, v):
    assert q.dtype == k.dtype == v.dtype
    return q


def recurrent_kernel(q, k, v):
    return q


class Layer(nn.Module):
    def __init__(self, d, mode="chunk"):
        super().__init__()
        self.mode = mode
        self.proj = nn.Linear(d, 3 * d)
        self.k_a = nn.Parameter(torch.ones(d))

    def forward(self, x):
        q, k, v = self.proj(x).chunk(3, dim=-1)
        k = k.addcmul(k, self.k_a)
        fn = chunk_kernel if self.mode == "chunk" else recurrent_kernel
        return fn(q=q, k=k, v=v)
'''
    assert found(src) == [(22, "DTL102", ("autocast",), '`self.mode == "chunk"`')]


def test_kernels_from_a_dict_and_through_partial():
    src = '''
def chunk_kernel(q, k, v, scale=1.0):
    assert all(t.dtype == q.dtype for t in (k, v))
    return q


KERNELS = {"chunk": chunk_kernel}


class Layer(nn.Module):
    def __init__(self, d, mode="chunk"):
        super().__init__()
        self.attn = functools.partial(KERNELS[mode], scale=0.5)
        self.proj = nn.Linear(d, 3 * d)
        self.k_a = nn.Parameter(torch.ones(d))

    def forward(self, x):
        q, k, v = self.proj(x).chunk(3, dim=-1)
        return self.attn(q, k * self.k_a, v)
'''
    assert found(src) == [(19, "DTL102", ("autocast",), "")]


def test_each_item_of_a_tuple_keeps_its_dtype():
    src = '''
def flash_attn_func(q, k, v):
    assert q.dtype == k.dtype == v.dtype
    return q


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, 3 * d)

    def forward(self, x):
        q, k, v = self.proj(x).chunk(3, dim=-1)
        q = q.float()
        q, k, v = (t.view(2, 4, -1) for t in (q, k, v))
        k, v = map(lambda t: t.transpose(1, 2), (k, v))
        return flash_attn_func(q, k, v)
'''
    [(row, code, regimes, _)] = found(src)
    assert (row, code) == (17, "DTL102") and set(regimes) == {"half", "loaded", "autocast"}


def test_a_list_built_in_a_loop_and_concatenated():
    src = '''
class Pyramid(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mix = nn.Linear(d, d)
        self.scales = nn.ParameterList()
        for _ in range(3):
            self.scales.append(nn.Parameter(torch.ones(d), requires_grad=False))

    def forward(self, x):
        outs = []
        for i in range(3):
            outs.append(x * torch.ones(x.shape[-1]))
        return self.mix(torch.cat(outs, dim=0))
'''
    assert found(src) == [(14, "DTL101", ("half", "loaded"), "")]


def test_library_callables_keep_the_dtype():
    src = '''
from transformers.activations import ACT2FN
from einops import rearrange


class MLP(nn.Module):
    def __init__(self, d, act="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(d, d)
        self.act = ACT2FN[act]
        self.fc2 = nn.Linear(d, d)

    def forward(self, x):
        h = self.act(self.fc1(x).float())
        h = rearrange(h, "b n d -> b n d")
        return self.fc2(h)
'''
    [d] = lint_text(HEADER + src)
    assert (d.start.row - 5, d.code) == (16, "DTL101")
    assert any("ACT2FN" in s.message and "keeps its input's dtype" in s.message for s in d.path)


def test_an_object_built_in_forward_carries_its_constructor_dtypes():
    src = '''
class Cache:
    def __init__(self, b, d):
        self.keys = torch.zeros(b, 0, d)

    def update(self, k):
        self.keys = torch.cat([self.keys, k], dim=1)
        return self.keys


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x, use_cache=False):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        cache = Cache(x.shape[0], x.shape[-1]) if use_cache else None
        if cache is not None:
            k = cache.update(k)
        return F.scaled_dot_product_attention(q, k, v)
'''
    [(row, code, regimes, cond)] = found(src)
    assert (row, code, regimes) == (21, "DTL102", ("half", "loaded"))
    assert "cache" in cond or "use_cache" in cond


def test_an_einsum_without_contraction_is_a_broadcast_multiply():
    src = '''
class Gain(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(d))
        self.out = nn.Linear(d, d)

    def forward(self, x):
        y = torch.einsum("bnd,d->bnd", x, self.gain.float())
        return self.out(y.to(x.dtype))
'''
    assert found(src) == []


def test_tensor_data_gives_the_factory_dtype_and_gather_follows_its_source():
    src = '''
class Pick(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        idx = torch.tensor([0], device=x.device)
        first = torch.gather(x, 0, idx[:, None, None].expand(1, x.shape[1], x.shape[2]))
        return self.proj(first)
'''
    assert found(src) == []


def test_a_subclass_keep_list_replaces_its_base():
    src = '''
class Base(nn.Module):
    _keep_in_fp32_modules = ["wo"]


class FF(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.wi = nn.Linear(d, d)
        self.wo = nn.Linear(d, d)

    def forward(self, x):
        return self.wo(self.wi(x))


class Model(Base):
    _keep_in_fp32_modules = None

    def __init__(self, d):
        super().__init__()
        self.ff = FF(d)
'''
    assert found(src) == []
    assert found(src.replace("    _keep_in_fp32_modules = None\n", "")) == [(13, "DTL101", ("loaded",), "")]


def test_a_finding_is_reported_once_per_line():
    src = '''
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x, flag=False):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if flag:
            x = x + 1
        return (q.float() @ k.float().transpose(-2, -1)).softmax(-1) @ v
'''
    assert found(src) == [(11, "DTL101", ("half", "loaded"), "")]


def test_a_branch_on_is_floating_point_of_a_known_dtype_is_decided():
    # the weight's dtype is floating in every regime, so only the first branch is a path of the program
    src = '''
def sinusoid(t, dim):
    freqs = torch.exp(-torch.arange(dim // 2, dtype=torch.float32) / dim)
    args = t[:, None].float() * freqs[None]
    return torch.cat([args.cos(), args.sin()], dim=-1)


class TimeEmbed(nn.Module):
    def __init__(self, d, freq_dim=256):
        super().__init__()
        self.fc = nn.Linear(freq_dim, d)
        self.freq_dim = freq_dim

    def forward(self, t, scale=None):
        emb = sinusoid(t, self.freq_dim)
        wdtype = self.fc.weight.dtype
        if wdtype.is_floating_point:
            emb = emb.to(wdtype)
        elif scale is not None:
            emb = emb * scale
        return self.fc(emb)
'''
    assert found(src) == []
    # with the test reversed the cast is on the infeasible side: every regime but autocast breaks
    assert [f[1] for f in found(src.replace("if wdtype.is_floating_point:", "if not wdtype.is_floating_point:"))] \
        == ["DTL101"]


def test_a_loop_over_a_layers_parameters_runs_at_least_once():
    # the path where the loop is skipped (and `found` stays None) cannot happen for an nn.Linear
    src = '''
def first_float_dtype(module):
    found = None
    for name, p in module.named_parameters():
        if p.is_floating_point():
            return p.dtype
        found = p.dtype
    if found is not None:
        return found
    return torch.float16


class Head(nn.Module):
    _keep_in_fp32_modules = ["proj"]

    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x.to(first_float_dtype(self.proj)))
'''
    assert found(src) == []


def test_a_value_returned_only_on_a_rank_tested_path_is_not_a_finding():
    # a prepared 4-D mask is passed through; the caller's own fallback is 2-D and is rebuilt in the compute dtype.
    # The analysis does not know ranks, so a mismatch that needs the pass-through path is not reported
    src = '''
def additive_mask(padding, like):
    if padding.ndim == 4:
        return padding
    keep = padding.bool()[:, None, None, :]
    return torch.zeros(keep.shape, dtype=like.dtype).masked_fill(~keep, torch.finfo(like.dtype).min)


class SelfAttention(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)

    def forward(self, ids, padding=None):
        if padding is None:
            padding = torch.ones(ids.shape)
        h = self.tok(ids)
        bias = additive_mask(padding, h)
        scores = self.q(h) @ self.k(h).transpose(-1, -2) + bias
        return scores.softmax(-1) @ self.v(h)
'''
    assert found(src) == []
    # without the rank test the pass-through is the only path: the fp32 mask promotes the scores
    flagged = found(src.replace("    if padding.ndim == 4:\n        return padding\n", "    return padding\n"))
    assert [f[1] for f in flagged] == ["DTL101"]


def test_an_explicit_dtype_the_analysis_cannot_see_is_a_cast():
    # `softmax(..., dtype=saved)` and `.to(self.enc.dtype)` (a property) cast to a dtype chosen by the author
    src = '''
def standardise(x):
    x = x.float()
    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5)


class Enc(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    @property
    def dtype(self):
        return self.proj.weight.dtype

    def forward(self, x):
        return self.proj(x)


class Model(nn.Module):
    def __init__(self, d, hook):
        super().__init__()
        self.enc = Enc(d)
        self.hook = hook

    def forward(self, x, v):
        h = self.enc(standardise(x).to(self.enc.dtype))
        scores = h @ h.transpose(-1, -2)
        scores = scores + self.hook(scores)
        saved = scores.dtype
        probs = torch.softmax(scores.float(), dim=-1, dtype=saved)
        return probs @ v
'''
    assert found(src) == []
    assert [f[1] for f in found(src.replace(", dtype=saved)", ")"))] == ["DTL101"]


def test_two_calls_of_one_layer_on_one_line_are_one_finding():
    src = '''
class Head(nn.Module):
    def __init__(self, d, n=3):
        super().__init__()
        self.n = n
        self.layers = nn.ModuleList(nn.Linear(d, d) for _ in range(n))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < self.n - 1 else layer(x)
        return x


class Decoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.head = Head(d)

    def forward(self, x):
        queries = torch.zeros(x.shape[0], 4, x.shape[-1])
        return self.head(queries) + x[:, :4]
'''
    rows = [f[0] for f in found(src) if f[1] == "DTL101"]
    assert rows == [10]


def test_a_keep_list_reaches_layers_of_either_class_built_in_a_conditional_comprehension():
    src = '''
class Gate(nn.Module):
    def __init__(self, d, e=4):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(e, d))

    def forward(self, h):
        return F.linear(h.float(), self.weight).softmax(-1)


class Local(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gate = Gate(d)
        self.ff = nn.Linear(d, d)

    def forward(self, x):
        return x + self.ff(x) * self.gate(x)[..., :1].to(x.dtype)


class Global(Local):
    pass


class Stack(nn.Module):
    _keep_in_fp32_modules_strict = ["gate.weight"]

    def __init__(self, d, kinds):
        super().__init__()
        self.blocks = nn.ModuleList([Local(d) if k == "local" else Global(d) for k in kinds])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
'''
    # .half() casts the gate too (fp32 input, fp16 weight); loaded keeps it fp32 in both layer classes
    assert found(src) == [(8, "DTL101", ("half",), "")]


def test_methods_of_a_class_that_is_not_a_module_are_not_run_under_autocast():
    # a feature extractor computes log-mel features itself; CUDA autocast wraps a model's forward, not it
    src = '''
class FeatureMixin:
    def pad(self, x):
        return x


class Extractor(FeatureMixin):
    def __init__(self, filters):
        self.filters = filters

    def log_mel(self, power):
        mel = self.filters.T @ power
        return torch.clamp(mel, min=1e-10).log10()


class Frontend(nn.Module):
    def __init__(self, filters):
        super().__init__()
        self.register_buffer("filters", filters)

    def forward(self, power):
        mel = self.filters.T @ power
        return torch.clamp(mel, min=1e-10).log10()
'''
    assert found(src) == [(23, "DTL108", ("autocast", "half", "loaded"), "")]
    # a class with no base may be an attention processor that a module's forward calls: still model code
    processor = found(src.replace("class Extractor(FeatureMixin):", "class Extractor:"))
    assert [(f[1], f[2]) for f in processor] == [("DTL108", ("autocast",)), ("DTL108", ("autocast", "half", "loaded"))]


def test_a_rank_decided_value_keeps_that_through_a_helper_chosen_at_run_time():
    # the mask helper is picked by a flag; each passes a 4-D mask through and rebuilds a 2-D one in the
    # compute dtype: the fp32 fallback mask breaks nothing, while the fp32 table below still does
    src = '''
def causal_bias(mask, like):
    if mask.dim() == 4:
        return mask
    return torch.zeros(mask.shape[0], 1, mask.shape[-1], mask.shape[-1], dtype=like.dtype)


def padding_bias(mask, like):
    if mask.dim() == 4:
        return mask
    return torch.zeros(mask.shape[0], 1, 1, mask.shape[-1], dtype=like.dtype)


class Encoder(nn.Module):
    def __init__(self, vocab, d, decoder=False):
        super().__init__()
        self.decoder = decoder
        self.tok = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.register_buffer("table", torch.randn(d, d).float(), persistent=False)

    def forward(self, ids, mask=None):
        if mask is None:
            mask = torch.ones(ids.shape)
        h = self.tok(ids)
        bias_fn = causal_bias if self.decoder else padding_bias
        bias = bias_fn(mask, h)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        probs = (q @ k.transpose(-1, -2) + bias).softmax(-1)
        return probs @ v @ self.table
'''
    assert [(f[0], f[1]) for f in found(src)] == [(30, "DTL101")]
