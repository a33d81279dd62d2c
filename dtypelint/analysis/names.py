"""Light import/alias resolution on the stdlib ``ast`` (no libcst scope metadata).

``Names`` maps local names bound by imports and top-level definitions to dotted
qualified names, so ``F.normalize``, ``nn.functional.normalize`` and
``torch.nn.functional.normalize`` all resolve to the same key, and
``from flash_attn import flash_attn_func as fa`` makes ``fa`` a flash-attn entry
point.  Resolving libcst's ScopeProvider/QualifiedNameProvider per file costs
8-10x a parse; this pass is a single walk over the module's top level (plus
imports nested in ``try``/``if`` blocks, where optional kernels are imported).
"""

from __future__ import annotations

import ast


def resolve_relative(module_name: str, level: int, target: str | None, is_package: bool = False) -> str:
    parts = module_name.split(".") if module_name else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if target:
        return f"{base}.{target}" if base else target
    return base


class Names:
    def __init__(self, tree: ast.Module, module_name: str, is_package: bool = False):
        self.module_name = module_name
        self.aliases: dict[str, str] = {}
        self.local_defs: dict[str, ast.AST] = {}
        self._walk(tree.body, module_name, is_package)

    def _walk(self, body: list[ast.stmt], module_name: str, is_package: bool) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    mod = resolve_relative(module_name, node.level, node.module, is_package)
                for a in node.names:
                    if a.name == "*":
                        continue
                    self.aliases[a.asname or a.name] = f"{mod}.{a.name}" if mod else a.name
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.local_defs[node.name] = node
                self.aliases.pop(node.name, None)
            elif isinstance(node, (ast.If, ast.Try)):
                self._walk(node.body, module_name, is_package)
                for h in getattr(node, "handlers", []):
                    self._walk(h.body, module_name, is_package)
                self._walk(node.orelse, module_name, is_package)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                # module-level alias: `attention = F.scaled_dot_product_attention`
                q = self.qualify(node.value)
                if q:
                    self.aliases[node.targets[0].id] = q

    def qualify(self, node: ast.AST) -> str | None:
        """Dotted qualified name of a Name/Attribute chain, or None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = node.id
        if head in self.local_defs:
            base = f"{self.module_name}.{head}" if self.module_name else head
        elif head in self.aliases:
            base = self.aliases[head]
        else:
            return None
        return ".".join([base] + list(reversed(parts)))


def canonical_torch(qname: str) -> str:
    """Normalise torch spellings: ``torch.nn.modules.linear.Linear`` -> ``torch.nn.Linear``."""
    if qname.startswith("torch.nn.modules."):
        rest = qname.split(".")
        return "torch.nn." + rest[-1]
    if qname.startswith("torch.cuda.amp.") or qname.startswith("torch.cpu.amp."):
        return "torch.amp." + qname.rsplit(".", 1)[-1]
    if qname.startswith("torch.amp.autocast_mode."):
        return "torch.amp." + qname.rsplit(".", 1)[-1]
    return qname
