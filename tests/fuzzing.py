"""Program generators and the property every program must satisfy, shared by ``test_fuzz.py`` and the
long run ``benchmarks/fuzz_run.py``.

The property (:func:`problems_of`): on any valid Python text, linting raises nothing and reports no
DTL005 (internal error); fixing (unsafe fixes included) raises nothing, and when it changes the
text the result compiles and the fixer did not have to refuse its own edits.

Generators:
- :func:`model_programs`: PyTorch-model-shaped modules assembled from the constructs the analysis
  interprets (casts, matmuls, attention kernels, norms, residuals, autocast blocks, parameters,
  buffers, fp32-kept modules, helpers calling each other, recursion, inheritance cycles...);
- ``hypothesmith.from_grammar()`` (arbitrary syntax), with a probe appended so the analysis runs;
- :func:`mutate`: the real fixtures with statements deleted or duplicated, operands swapped, casts
  inserted, attributes renamed and dtypes exchanged.
"""

from __future__ import annotations

import ast
import random
import traceback
from pathlib import Path

from hypothesis import strategies as st

FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py"))
PROBE = "\nimport torch\n\ndef _dtypelint_probe(x):\n    return x.float() @ x\n"


# -- the property --------------------------------------------------------------------------


def problems_of(text: str, filename: str = "fuzz.py") -> list[str]:
    """What went wrong on ``text`` (empty: nothing); each entry starts with a short kind."""
    from dtypelint.engine import lint_source
    from dtypelint.fixer.api import fix_source

    out: list[str] = []
    try:
        diags = lint_source(text, filename)
    except BaseException as exc:  # noqa: BLE001 - anything escaping lint_source is a bug
        if isinstance(exc, KeyboardInterrupt):
            raise
        return [f"lint raised: {traceback.format_exc()}"]
    for d in diags:
        if d.code == "DTL005":
            out.append(f"DTL005: {d.message}\n{analysis_traceback(text, filename)}")
    try:
        report, _ = fix_source(text, filename, unsafe=True)
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        return out + [f"fix raised: {traceback.format_exc()}"]
    if report.error is not None:
        out.append(f"fix refused: {report.error}")
    elif report.text != text:
        try:
            compile(report.text, filename, "exec", dont_inherit=True)
        except SyntaxError as exc:
            out.append(f"fixed text does not compile: {exc}")
    return out


def analysis_traceback(text: str, filename: str) -> str:
    """Re-run the analysis without the engine's safety net, for the traceback of a DTL005."""
    try:
        from dtypelint.engine import analyse_text, buffer_task
        from dtypelint.source import SourceFile

        task, index = buffer_task(text, filename)
        analyse_text(SourceFile.from_text(text), task, index)
    except Exception:  # noqa: BLE001
        return traceback.format_exc()
    return "(no exception when re-run without the engine's net)"


def compiles(text: str) -> bool:
    try:
        compile(text, "fuzz.py", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


# -- PyTorch-model-shaped programs ----------------------------------------------------------------

DTYPES = ("torch.float32", "torch.float16", "torch.bfloat16", "torch.float64", "torch.int64", "torch.bool",
          "x.dtype", "self.dtype", "None")
ATTR_INITS = (
    "nn.Linear({d}, {d})", "nn.Linear({d}, {d}, bias=False).float()", "nn.LayerNorm({d})", "nn.Embedding(10, {d})",
    "nn.Parameter(torch.ones({d}))", "nn.Parameter(torch.zeros({d}, dtype={t}))", "torch.arange({d}).float()",
    "nn.ModuleList([nn.Linear({d}, {d}) for _ in range(2)])", "nn.Sequential(nn.Linear({d}, {d}), nn.GELU())",
    "{d} ** -0.5", "None", "{cls}()", "self.{a}", "nn.Dropout(0.1)", "torch.finfo({t}).min",
)
EXPRS = (
    "{u}.float()", "{u}.half()", "{u}.to({t})", "{u}.to({w}.dtype)", "{u}.type_as({w})", "{u} @ {w}",
    "torch.matmul({u}, {w})", "torch.bmm({u}, {w}.transpose(1, 2))", "{u}.softmax(-1)",
    "F.softmax({u}, dim=-1, dtype=torch.float32)", "self.{a}({u})", "{u} + {w}", "{u} * self.{a}",
    "{u}.masked_fill(mask, -1e9)", "{u}.masked_fill(mask, torch.finfo({u}.dtype).min)",
    "F.scaled_dot_product_attention({u}, {w}, {z})", "torch.where(mask, {u}, {w})",
    "torch.einsum('bij,bjk->bik', {u}, {w})", "torch.cat([{u}, {w}], dim=-1)", "{u}.float().pow(2).mean(-1, keepdim=True)",
    "{u} * torch.rsqrt({w} + 1e-6)", "self.{a}", "{fn}({u})", "{fn}({u}, {w})", "{u}[0]", "{u}[..., :2]",
    "torch.zeros_like({u})", "torch.ones({d}, dtype={t}, device={u}.device)", "{u}.new_zeros({d})",
    "torch.tensor(1.0)", "{u}.sum()", "{u}.view(-1)", "({u}, {w})[0]", "{u} if {w} is None else {w}",
    "lambda q: q @ {u}", "[{u} for _ in range(2)][0]", "{u}.detach().clone()", "getattr(self, '{a}')",
    "flash_attn_func({u}, {w}, {z})", "{u}.index_put_((idx,), {w})", "{u}.scatter_add(0, idx, {w})",
    "torch.lerp({u}, {w}, 0.5)", "{u}.contiguous()", "super().forward({u})", "{cls}()({u})", "{u}.dtype",
    "max({u}, {w})", "{u}.item()", "1e-9", "65504.0", "-1e4", "{u} // 2", "not {u}", "{u} and {w}",
)
STMTS = (
    "{v} = {e}", "{v} = {e}", "{v} = {e}", "{v} += {e}", "{v}, {v2} = {u}.chunk(2, dim=-1)", "{u}[idx] = {e}",
    "self.{a} = {e}", "assert {u}.dtype == {w}.dtype", "del {v}", "{v}: torch.Tensor = {e}", "{v} = ({v2} := {e})",
    "print({e})", "return {e}", "yield {e}", "raise ValueError({e})", "pass",
)
BLOCKS = (
    "if {u}.dtype == torch.float16:", "if self.training:", "for _i in range(2):", "while {u} is None:",
    "with torch.autocast('cuda', dtype=torch.bfloat16):", "with torch.autocast('cuda', enabled=False):",
    "with torch.no_grad():", "try:", "if mask is not None:", "for {v} in ({u}, {w}):",
)
NAMES = ("x", "h", "q", "k", "v", "attn", "mask", "out", "residual", "scores", "weights", "y")
ATTRS = ("proj", "norm", "scale", "weight", "bias", "emb", "layers", "cache", "gate", "inv_freq", "dtype")


@st.composite
def model_programs(draw) -> str:
    """A module with helpers and model classes made of the constructs the analysis interprets."""
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    classes = [f"Block{i}" for i in range(rnd.randint(1, 3))]
    helpers = [f"helper{i}" for i in range(rnd.randint(0, 3))]
    lines = ["import torch", "import torch.nn as nn", "import torch.nn.functional as F",
             *rnd.choice([[], ["from flash_attn import flash_attn_func"], ["from .other import thing"]])]

    def pick(seq):
        return rnd.choice(seq)

    def fill(template: str, names: list[str]) -> str:
        fmt = {"u": pick(names), "w": pick(names), "z": pick(names), "v": pick(NAMES), "v2": pick(NAMES),
               "a": pick(ATTRS), "t": pick(DTYPES), "d": pick(("4", "8", "dim", "self.dim")),
               "cls": pick(classes), "fn": pick(helpers or ["torch.relu"])}
        if "{e}" in template:
            fmt["e"] = fill(pick(EXPRS), names)
        return template.format(**fmt)

    def body(indent: int, names: list[str], depth: int, n: int) -> list[str]:
        out = []
        pad = "    " * indent
        for _ in range(n):
            if depth < 3 and rnd.random() < 0.25:
                head = fill(pick(BLOCKS), names)
                out.append(pad + head)
                out += body(indent + 1, names, depth + 1, rnd.randint(1, 3))
                if head == "try:":
                    out += [pad + "except Exception as exc:", pad + "    " + fill("{v} = {e}", names)]
                    if rnd.random() < 0.5:
                        out += [pad + "finally:", pad + "    pass"]
                elif head.startswith("if ") and rnd.random() < 0.5:
                    out += [pad + "else:"] + body(indent + 1, names, depth + 1, rnd.randint(1, 2))
            else:
                out.append(pad + fill(pick(STMTS), names))
        return out

    for h in helpers:
        lines += ["", "", f"def {h}(x, y=None, *args, scale=1.0, **kw):"]
        lines += body(1, ["x", "y"], 1, rnd.randint(1, 5))
        lines.append("    return " + fill(pick(EXPRS), ["x", "y"]))
    for i, cls in enumerate(classes):
        bases = pick(["nn.Module", "torch.nn.Module", classes[i - 1] if i else "nn.Module",
                      classes[-1], "PreTrainedModel", "nn.Module, Mixin"])
        lines += ["", "", f"class {cls}({bases}):"]
        if rnd.random() < 0.4:
            lines.append(f"    _keep_in_fp32_modules = [{pick(ATTRS)!r}]")
        lines += ["    def __init__(self, dim=8, **kwargs):", "        super().__init__()", "        self.dim = dim"]
        for _ in range(rnd.randint(1, 6)):
            if rnd.random() < 0.2:
                lines.append(f"        self.register_buffer({pick(ATTRS)!r}, {fill(pick(ATTR_INITS), ['self'])}, "
                             f"persistent={pick(['False', 'True'])})")
            else:
                lines.append(f"        self.{pick(ATTRS)} = {fill(pick(ATTR_INITS), ['self'])}")
        params = pick([["x"], ["x", "mask=None"], ["q", "k", "v", "mask=None"], ["hidden", "*args", "**kwargs"]])
        names = [p.split("=")[0].strip("*") for p in params] + ["idx"]
        decorator = pick(["", "@torch.no_grad()\n    ", "@staticmethod\n    ", "@torch.compile\n    "])
        lines.append(f"    {decorator}def forward(self, {', '.join(params)}):")
        if decorator.startswith("@staticmethod"):
            lines[-1] = lines[-1].replace("(self, ", "(")
        lines.append("        idx = torch.arange(2)")
        lines += body(2, names, 1, rnd.randint(2, 10))
        lines.append("        return " + fill(pick(EXPRS), names))
        if rnd.random() < 0.3:
            lines += ["", "    def extra(self, x):", "        return self.forward(x) + self.extra(x)"]
    if rnd.random() < 0.3:
        lines += ["", "", f"model = {pick(classes)}().half()", "y = model(torch.ones(2, 8).half())"]
    return "\n".join(lines) + "\n"


def with_probe(text: str) -> str:
    """A program plus a function that makes sure the analysis (not only the prefilter) sees it."""
    return text + PROBE


# -- mutations of the real fixtures -----------------------------------------------------------------

CASTS = ("float", "half", "bfloat16", "double")
DTYPE_ATTRS = ("float32", "float16", "bfloat16", "float64")


def _bodies(tree: ast.AST) -> list[list[ast.stmt]]:
    out = []
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                out.append(value)
    return out


def mutate(text: str, rnd: random.Random, n: int = 2) -> str | None:
    """``text`` with ``n`` random mutations; None when the result is not valid Python."""
    tree = ast.parse(text)
    for _ in range(n):
        op = rnd.choice(("delete", "duplicate", "swap", "cast", "rename", "dtype"))
        if op in ("delete", "duplicate"):
            bodies = _bodies(tree)
            if not bodies:
                continue
            body = rnd.choice(bodies)
            i = rnd.randrange(len(body))
            if op == "delete" and len(body) == 1:
                body[0] = ast.Pass()
            elif op == "delete":
                del body[i]
            else:
                body.insert(i, body[i])
        elif op == "swap":
            ops = [x for x in ast.walk(tree) if isinstance(x, ast.BinOp)]
            if ops:
                b = rnd.choice(ops)
                b.left, b.right = b.right, b.left
        elif op == "cast":
            loads = [x for x in ast.walk(tree) if isinstance(x, (ast.Name, ast.Attribute))
                     and isinstance(x.ctx, ast.Load)]
            if loads:
                target = rnd.choice(loads)
                inner = ast.copy_location(type(target)(**{f: getattr(target, f) for f in target._fields}), target)
                if rnd.random() < 0.5:
                    new = ast.Call(ast.Attribute(inner, rnd.choice(CASTS), ast.Load()), [], [])
                else:
                    dtype = ast.Attribute(ast.Name("torch", ast.Load()), rnd.choice(DTYPE_ATTRS), ast.Load())
                    new = ast.Call(ast.Attribute(inner, "to", ast.Load()), [dtype], [])
                _replace(tree, target, new)
        elif op == "rename":
            attrs = [x for x in ast.walk(tree) if isinstance(x, ast.Attribute)]
            if attrs:
                rnd.choice(attrs).attr = rnd.choice([a.attr for a in attrs] + ["renamed_attr"])
        else:
            dts = [x for x in ast.walk(tree) if isinstance(x, ast.Attribute) and x.attr in DTYPE_ATTRS]
            if dts:
                rnd.choice(dts).attr = rnd.choice(DTYPE_ATTRS)
    try:
        out = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
    except (RecursionError, ValueError, AttributeError):
        return None
    return out if compiles(out) else None


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return


# -- reducing a failing program (for the notes) -------------------------------------------------------


def reduce(text: str, still_fails) -> str:
    """Delete statements (innermost last) while ``still_fails(text)`` holds; a small reproducer."""
    changed = True
    while changed:
        changed = False
        tree = ast.parse(text)
        for body in _bodies(tree):
            for i in range(len(body)):
                saved = list(body)
                if len(body) == 1:
                    body[0] = ast.Pass()
                else:
                    del body[i]
                try:
                    candidate = ast.unparse(tree) + "\n"
                except Exception:  # noqa: BLE001
                    candidate = None
                if candidate and candidate != text and compiles(candidate) and still_fails(candidate):
                    text, changed = candidate, True
                    break
                body[:] = saved
            if changed:
                break
    return text


# -- multi-file projects: cross-file facts (bases, helpers, kept modules) in cycles ----------------------


@st.composite
def projects(draw) -> dict[str, str]:
    """A package of 2-4 model-shaped modules that import each other's classes and helpers (cycles too)."""
    n = draw(st.integers(2, 4))
    files = {"pkg/__init__.py": ""}
    for i in range(n):
        imports = []
        for j in draw(st.lists(st.integers(0, n - 1), max_size=3, unique=True)):
            names = draw(st.sampled_from(["Block0", "Block0, helper0", "Block1 as Base", "*", "helper1"]))
            imports.append(f"from pkg.m{j} import {names}" if j != i or names != "*" else "import pkg")
        if draw(st.booleans()):
            imports.append(f"from . import m{(i + 1) % n}")
        files[f"pkg/m{i}.py"] = "\n".join(imports) + "\n" + draw(model_programs())
    return files


def project_problems(files: dict[str, str]) -> list[str]:
    """The property on a whole project, through the engine's two phases, fixes included (nothing written)."""
    import tempfile
    from dataclasses import replace

    from dtypelint.config import Settings
    from dtypelint.engine import RunOptions, build_tasks, run
    from dtypelint.fixer.loop import FixOptions
    from dtypelint.fixer.run import FileFixer

    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        settings = Settings(root=root)
        paths = sorted(root.rglob("*.py"))
        for fix in (None, FileFixer(FixOptions(unsafe=True, write=False))):
            tasks = [replace(t, fix=fix) for t in build_tasks([(p, settings) for p in paths])]
            try:
                result = run(tasks, RunOptions(in_process=True))
            except Exception:  # noqa: BLE001
                return out + [f"run raised: {traceback.format_exc()}"]
            for o in result.outcomes:
                out += [f"DTL005 in {Path(o.filename).name}: {d.message}" for d in o.diagnostics if d.code == "DTL005"]
                if o.fix is not None and o.fix.error is not None:
                    out.append(f"fix refused in {Path(o.filename).name}: {o.fix.error}")
    return out
