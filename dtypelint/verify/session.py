"""Verify the findings of one module file: reproduce each in its regime, then run its fix.

For a finding and a regime: pick the target (:mod:`targets`), build a harness (a configured
factory, or synthesis probed in float32 until the inputs fit), run the original source and
tie what failed to the flagged statement.  When another finding of the run fails first on
the way (an earlier statement, the same forward pass), its fix is applied too and the run
repeated, and the result says so.  When the flagged line never ran, boolean parameters
are flipped.  Then the source with the finding's fix runs in the same regime: ``fixed``
when it runs clean, returns the compute dtype (half/loaded), and the error against an fp32
run of the same weights is measured.
"""

from __future__ import annotations

import importlib
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from dtypelint.source import SourceError, SourceFile
from dtypelint.verify import targets as targets_mod
from dtypelint.verify.harness import HarnessSpec, RunResult, RunSetup, run_regime
from dtypelint.verify.inputs import flag_variants, input_sets
from dtypelint.verify.jobs import FindingRef, ModuleJob
from dtypelint.verify.overlay import FixError, LineMap, apply_fixes, write_copies
from dtypelint.verify.results import VerifyResult
from dtypelint.verify.synthesis import NotBuildable, construction

log = logging.getLogger("dtypelint.verify")
MAX_CONTEXT = 4  # other findings' fixes applied to get past them
MAX_FLAG_VARIANTS = 4


@dataclass
class Harness:
    spec: HarnessSpec | None
    why: str = ""  # why none could be built
    flags: list[dict] = field(default_factory=list)  # keyword variants to reach a skipped branch


RANK = {"not-run": 0, "not-reproduced": 1, "reproduced": 2}


@dataclass
class Attribution:
    kind: str  # "finding", "other", "path", "elsewhere", "none"
    other: FindingRef | None = None
    evidence: str = ""
    where: tuple[str, int] | None = None


@dataclass
class Outcome:
    """What one harness showed about a finding."""

    status: str
    spec: HarnessSpec
    result: RunResult | None
    attribution: Attribution
    fixes: frozenset = frozenset()
    note: str = ""
    unreached: bool = False  # the flagged line (or the path's source) never ran


def _summarise(tried: list[tuple[str, str]], best: "Outcome | None") -> str:
    """The best harness' note first, then the others in short."""
    if not tried:
        return ""
    first = next((t for t in tried if best is not None and t[1] == best.note), tried[0])
    rest = [t for t in tried if t is not first]
    text = f"{first[0]}: {first[1]}"
    if rest:
        text += " (also tried " + "; ".join(f"{name}: {note[:100]}" for name, note in rest[:3]) + \
            (f"; and {len(rest) - 3} more" if len(rest) > 3 else "") + ")"
    return text


def _out_of_memory(result: RunResult) -> bool:
    return result.error_type == "MemoryError" or "can't allocate memory" in (result.error or "")


def _short(path: str) -> str:
    return Path(path).name


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# findings whose claim is a silent float32 widening (not an error): a promotion recorded on any line of
# their dataflow path (a private helper, the statement that built the returned value) reproduces them
PROMOTION_CLAIMS = frozenset({"DTL114"})

class Session:
    def __init__(self, job: ModuleJob):
        self.job = job
        self.root = Path(job.import_root)
        self.texts: dict[str, str] = {}
        self.tmp = Path(tempfile.mkdtemp(prefix="dtypelint-verify-"))
        self.variants: dict[frozenset, tuple[dict, dict[str, LineMap], dict[str, str]]] = {}
        self.harnesses: dict[tuple, Harness] = {}
        self.runs: dict[tuple, tuple[HarnessSpec, RunResult]] = {}
        self.by_key = {f.key: f for f in [*job.others, *job.findings]}
        self.lines = {f.key: self._statement(f) for f in self.by_key.values()}
        self.probe: dict[str, set[int]] = {}
        for f in self.by_key.values():
            self.probe.setdefault(os.path.realpath(f.path), set()).update(self.lines[f.key])
            if f.code in PROMOTION_CLAIMS:
                # the widening may happen in a helper or an earlier statement of the dataflow path
                for p, r in f.steps:
                    self.probe.setdefault(os.path.realpath(p), set()).add(r)
        self.compute = getattr(torch, job.compute_dtype)
        sources = [self.text(p) for p in {job.path, *(f.path for f in job.findings)}]
        self.stand_ins = any(k in t for t in sources for k in ("flash_attn", "xformers", "apex"))

    # -- sources and variants ------------------------------------------------------------------

    def text(self, path: str) -> str:
        if path not in self.texts:
            try:
                self.texts[path] = SourceFile.from_bytes(Path(path).read_bytes()).text
            except (OSError, SourceError):
                self.texts[path] = ""
        return self.texts[path]

    def _statement(self, f: FindingRef) -> set[int]:
        return targets_mod.statement_lines(self.text(f.path), f.row, f.end_row)

    def variant(self, fixes: frozenset):
        """(overlay, line maps by copy path, copy -> original) for the original source plus ``fixes``."""
        if fixes not in self.variants:
            by_file: dict[str, list] = {}
            for key in sorted(fixes):
                f = self.by_key[key]
                by_file.setdefault(f.path, []).append(f)
            texts = {}
            for path, found in by_file.items():
                texts[path] = apply_fixes(self.text(path), [f.fix for f in found], path)
            folder = self.tmp / f"v{len(self.variants)}"
            patched = write_copies(texts, folder, self.root)
            maps = {os.path.realpath(copy): LineMap(self.text(orig), texts[orig]) for orig, (copy, _) in patched.items()}
            originals = {os.path.realpath(copy): os.path.realpath(orig) for orig, (copy, _) in patched.items()}
            self.variants[fixes] = (patched, maps, originals)
        return self.variants[fixes]

    def watched(self, fixes: frozenset) -> tuple[str, ...]:
        patched, _, _ = self.variant(fixes)
        files = {f.path for f in self.by_key.values()} | {self.job.path}
        files |= {p for f in self.job.findings for p, _ in f.steps}
        return tuple(sorted(files | {copy for copy, _ in patched.values()}))

    def to_original(self, fixes: frozenset, where):
        """(file, line) of a run (maybe in a fixed copy) in the original's coordinates."""
        _, maps, originals = self.variant(fixes)
        f, line = where[0], where[1]
        if f in originals:
            return originals[f], maps[f](line)
        return f, line

    # -- running ---------------------------------------------------------------------------------

    def run(self, spec: HarnessSpec, regime: str, fixes: frozenset = frozenset(), reference: bool = False) -> RunResult:
        key = (id(spec), regime, fixes, reference)  # the cache keeps ``spec`` alive: its id is not reused
        if key in self.runs:
            return self.runs[key][1]
        patched, maps, _ = self.variant(fixes)
        probe = dict(self.probe)
        for orig, (copy, text) in patched.items():
            wanted, m = self.probe.get(os.path.realpath(orig), set()), maps[os.path.realpath(copy)]
            probe[os.path.realpath(copy)] = {n for n in range(1, text.count("\n") + 2) if m(n) in wanted}
        setup = RunSetup(device=self.job.device, watch=self.watched(fixes), probe=probe, patched=patched,
                         roots=(Path(self.job.project_root),), purge="module", reference=reference,
                         user_sinks=tuple(self.job.user_sinks), stand_ins=self.stand_ins)
        started = time.monotonic()
        result = run_regime(self.root, self.job.module_name, spec, regime, setup=setup)
        log.debug("%.2fs %s %s fixes=%s: %s", time.monotonic() - started, regime, spec.description[:80],
                  sorted(fixes), result.summary()[:120])
        self.runs[key] = (spec, result)
        return result

    # -- harnesses -------------------------------------------------------------------------------

    def harness(self, target: targets_mod.Target, regime: str) -> Harness:
        key = (target, regime)
        if key not in self.harnesses:
            try:
                self.harnesses[key] = self._harness(target, regime)
            except NotBuildable as exc:
                self.harnesses[key] = Harness(None, str(exc))
            except Exception as exc:  # a bug in synthesis must not stop the other findings
                self.harnesses[key] = Harness(None, f"harness synthesis failed: {type(exc).__name__}: {exc}")
        return self.harnesses[key]

    def _module(self):
        from dtypelint.verify.harness import _module_for
        from dtypelint.verify.stubs import stubs_installed

        patched, _, _ = self.variant(frozenset())
        setup = RunSetup(patched=patched, roots=(Path(self.job.project_root),), purge="module")
        with stubs_installed(device=self.job.device, enabled=self.stand_ins), \
                _module_for(self.root, self.job.module_name, setup) as mod:
            return mod

    def _harness(self, target: targets_mod.Target, regime: str) -> Harness:
        compute = self.job.compute_dtype
        configured = dict(self.job.harness).get(f"{self.job.module_name}:{target.name}")
        if configured:
            spec = HarnessSpec(factory=configured, kind="factory", method=target.method or "forward",
                               compute_dtype=compute, description=f"{configured}() (configured)")
            return Harness(spec)
        try:
            mod = self._module()
        except Exception as exc:
            raise NotBuildable(f"importing {self.job.module_name} failed: {type(exc).__name__}: {exc}") from None
        obj = getattr(mod, target.name, None)
        if obj is None:
            raise NotBuildable(f"{self.job.module_name} has no attribute {target.name}")
        source = self.text(self.job.path)
        if target.kind == "function":
            fn, model, values = obj, None, {}
            base = HarnessSpec(factory=target.name, kind="function", compute_dtype=compute)
            call_desc = target.name
        else:
            if not (isinstance(obj, type) and issubclass(obj, torch.nn.Module)):
                raise NotBuildable(f"{target.name} is not an nn.Module subclass")
            build = construction(obj, vars(mod), source, torch)
            values = build.values
            model, failures = None, []
            for init_desc, make_kwargs in build.attempts():
                torch.manual_seed(0)
                try:
                    model = obj(**make_kwargs())
                    break
                except Exception as exc:
                    failures.append(f"{init_desc} failed: {type(exc).__name__}: {first_line(exc)[:200]}")
            if model is None:
                raise NotBuildable("; ".join(failures[:2]))
            fn = getattr(model, target.method)
            base = HarnessSpec(factory=target.name, init=lambda t, k=make_kwargs: k(), method=target.method,
                               compute_dtype=compute)
            base = self._loader(base, obj, mod, regime)
            call_desc = f"{init_desc}.{target.method}"
        if base.container:
            call_desc = f"{call_desc} (inside {base.description})"
        last, tried = "", 0
        for batch in (2, 1):  # some modules hard-code a batch of one (a cache built in __init__)
            sets = input_sets(fn, model, values, torch, function=target.kind == "function", batch=batch)
            for inputs in sets:
                tried += 1
                spec = replace(base, make_inputs=inputs.make, description=f"{call_desc}({inputs.description})")
                probe = self.run(spec, "float32")
                if probe.ok or probe.dtype_error:
                    return Harness(spec, flags=flag_variants(fn))
                last = f"{probe.error_type}: {probe.error}"
                if _out_of_memory(probe):
                    raise NotBuildable(f"{call_desc}: the module exhausted the memory limit ({self.job.memory_mb} MiB): "
                                       f"{last[:200]}")
                if probe.stage in ("import", "build"):
                    raise NotBuildable(f"{call_desc}: {last[:300]}")
        raise NotBuildable(f"no input shape fits {call_desc} ({tried} tried; last: {last[:200]})")

    def _loader(self, base: HarnessSpec, cls, mod, regime: str) -> HarnessSpec:
        """For the loaded regime: the model whose keep lists (or library loader) decide the dtypes."""
        from dtypelint.verify.build import is_transformers_model, keep_in_fp32_names, submodule_of

        if regime != "loaded":
            return base
        if is_transformers_model(cls):
            return replace(base, loader="transformers")
        if keep_in_fp32_names(cls, self.job.compute_dtype):
            return base
        holders = targets_mod.containers(self.text(self.job.path), cls.__name__)
        owners = []
        for name, size in holders.items():
            value = getattr(mod, name, None)
            if (isinstance(value, type) and issubclass(value, torch.nn.Module)
                    and (keep_in_fp32_names(value, self.job.compute_dtype) or is_transformers_model(value))):
                owners.append((not keep_in_fp32_names(value, self.job.compute_dtype), size, name, value))
        for _, _, name, owner in sorted(owners, key=lambda o: o[:3])[:3]:
            try:
                owner_build = construction(owner, vars(mod), self.text(self.job.path), torch)
            except NotBuildable:
                continue
            for desc, make_kwargs in owner_build.attempts():
                try:
                    torch.manual_seed(0)
                    instance = owner(**make_kwargs())
                except Exception:
                    continue
                if submodule_of(instance, cls) is not None:
                    return replace(base, container=name, container_init=lambda t, k=make_kwargs: k(),
                                   loader="transformers" if is_transformers_model(owner) else "", description=desc)
                break
        return base

    # -- attribution -----------------------------------------------------------------------------

    def _owner(self, where, fixes: frozenset, exclude: FindingRef | None = None) -> FindingRef | None:
        """The finding whose flagged statement holds ``where`` (file, line[, col, end_col])."""
        f, line = self.to_original(fixes, where)
        hits = [g for g in self.by_key.values()
                if os.path.realpath(g.path) == f and line in self.lines[g.key] and g is not exclude]
        if len(hits) > 1:
            unfixed = [g for g in hits if g.key not in fixes]
            hits = unfixed or hits
        if len(hits) > 1 and len(where) >= 4 and where[2] >= 0 and not fixes:
            col, end = where[2] + 1, where[3] + 1
            overlap = [g for g in hits if g.row == line and not (g.end_column <= col or end <= g.column)]
            hits = overlap or hits
        return sorted(hits, key=lambda g: (g.row, g.column))[0] if hits else None

    def attribute(self, result: RunResult, finding: FindingRef, fixes: frozenset) -> Attribution:
        stacks: list[tuple[str, tuple]] = []
        if result.dtype_error and result.frames:
            stacks.append((f"{result.error_type}: {result.error}", result.frames))
        for v in result.violations:
            if v.where:
                stacks.append((f"contract: {v.message} (inputs {', '.join(d.replace('torch.', '') for d in v.dtypes)})",
                               v.where))
        promotions = [(p.describe(), (p.where,)) for p in result.promotions]
        for evidence, stack in [*stacks, *promotions]:
            for where in stack:
                if self._owner(where, fixes) is finding:
                    f, line = self.to_original(fixes, where)
                    return Attribution("finding", evidence=evidence, where=(f, line))
        for evidence, stack in stacks:
            for where in stack:
                owner = self._owner(where, fixes)
                if owner is not None and owner is not finding:
                    return Attribution("other", owner, evidence, self.to_original(fixes, where))
        steps = {(os.path.realpath(p), r) for p, r in finding.steps}
        for evidence, stack in stacks:
            for where in stack:
                if tuple(self.to_original(fixes, where)) in steps:
                    return Attribution("path", evidence=evidence, where=self.to_original(fixes, where))
        if finding.code in PROMOTION_CLAIMS:
            # a finding whose claim *is* a silent widening: one on its dataflow path reproduces it
            for evidence, stack in promotions:
                for where in stack:
                    if tuple(self.to_original(fixes, where)) in steps:
                        return Attribution("path", evidence=evidence, where=self.to_original(fixes, where))
        if stacks:
            evidence, stack = stacks[0]
            return Attribution("elsewhere", evidence=evidence, where=self.to_original(fixes, stack[0]))
        if result.dtype_error:
            return Attribution("elsewhere", evidence=f"{result.error_type}: {result.error}")
        return Attribution("none")

    def ran_flagged(self, result: RunResult, finding: FindingRef, fixes: frozenset) -> bool:
        wanted = {(os.path.realpath(finding.path), n) for n in self.lines[finding.key]}
        return any(self.to_original(fixes, (f, line)) in wanted for f, hit in result.lines.items() for line in hit)

    # -- one finding -----------------------------------------------------------------------------

    def verify(self, finding: FindingRef, regime: str) -> VerifyResult:
        started = time.monotonic()
        device = "fake-cuda" if (regime == "autocast" and self.job.device == "cpu") else self.job.device
        out = VerifyResult(finding.code, finding.filename, finding.row, finding.column, regime, device=device)
        try:
            self._verify(finding, regime, out)
        except Exception as exc:  # a bug in the verifier: report it on this finding, keep going
            out.status, out.detail = "not-run", f"the verifier failed: {type(exc).__name__}: {exc}"
        out.seconds = time.monotonic() - started
        return out

    def _verify(self, finding: FindingRef, regime: str, out: VerifyResult) -> None:
        from dtypelint.catalog import get_rule

        spec = get_rule(finding.code)
        if spec is not None and spec.runtime == "values":
            out.status = "not-run"
            out.detail = (f"{finding.code} is a value-dependent hazard (inf/NaN for particular inputs, such as a fully "
                          f"masked row or activations above 256): verify reproduces dtype failures only")
            return
        me = os.path.realpath(finding.path)
        path_rows = {r for p, r in finding.steps if os.path.realpath(p) == me}
        candidates, why = targets_mod.targets_for(self.text(finding.path), finding.row, path_rows)
        if not candidates:
            out.status, out.detail = "not-run", why
            return
        tried: list[tuple[str, str]] = []  # (target, note) of the harnesses that did not reproduce it
        best: Outcome | None = None
        for target in candidates:
            h = self.harness(target, regime)
            if h.spec is None:
                tried.append((target.describe(), h.why))
                continue
            outcome = self._reproduce(finding, regime, h)
            if outcome.status == "reproduced":
                best = outcome
                break
            tried.append((target.describe(), outcome.note))
            if best is None or RANK[outcome.status] > RANK[best.status]:
                best = outcome
        if best is None or best.status != "reproduced":
            out.status = best.status if best is not None else "not-run"
            out.detail = _summarise(tried, best)
            if best is not None:
                out.harness = best.spec.description
                out.output_dtype = best.result.output_dtype if best.result is not None else None
            if best is None:
                out.detail = "no harness: " + out.detail
            return
        out.harness = best.spec.description + "".join(f"; {n}" for n in best.result.notes)
        out.output_dtype = best.result.output_dtype
        out.status = "reproduced"
        out.with_fixes = [self.by_key[k].label() for k in sorted(best.fixes)]
        a = best.attribution
        f, line = a.where if a.where else (finding.path, finding.row)
        out.detail = f"{a.evidence} at {_short(f)}:{line}"
        if a.kind == "path":
            out.detail += " (on the finding's dataflow path)"
        self._check_fix(finding, regime, best.spec, best.fixes, out)

    def _source_ran(self, result: RunResult, finding: FindingRef, fixes: frozenset) -> bool:
        """The dataflow path's first step (where the float32 comes from) ran, when it is in a traced file."""
        if not finding.steps:
            return True
        path, row = finding.steps[0]
        real = os.path.realpath(path)
        if real not in {os.path.realpath(f) for f in self.watched(frozenset())}:
            return True
        wanted = {(real, n) for n in targets_mod.statement_lines(self.text(path), row)}
        return any(self.to_original(fixes, (f, line)) in wanted for f, hit in result.lines.items() for line in hit)

    def _reproduce(self, finding: FindingRef, regime: str, h: Harness) -> "Outcome":
        variants = [h.spec] + [replace(h.spec, extra_kwargs=flags, description=f"{h.spec.description} with "
                                       + ", ".join(f"{k}={v}" for k, v in flags.items()))
                               for flags in h.flags[:MAX_FLAG_VARIANTS]]
        first: Outcome | None = None
        for spec in variants:
            outcome = self._attempt(finding, regime, spec)
            if outcome.status != "not-run" or not outcome.unreached:
                return outcome
            first = first or outcome
        return first

    def _attempt(self, finding: FindingRef, regime: str, spec: HarnessSpec) -> "Outcome":
        fixes: frozenset = frozenset()
        note = ""
        for _ in range(MAX_CONTEXT + 1):
            result = self.run(spec, regime, fixes)
            a = self.attribute(result, finding, fixes)
            if a.kind in ("finding", "path"):
                return Outcome("reproduced", spec, result, a, fixes)
            if result.cpu_unsupported:
                return Outcome("not-run", spec, result, a, fixes,
                               f"the CPU kernel has no {self.job.compute_dtype} implementation ({result.error}); "
                               "a CUDA machine has one: --device cuda")
            if a.kind == "other" and a.other.fix is not None and a.other.key not in fixes:
                try:
                    self.variant(fixes | {a.other.key})
                except FixError:
                    note = f"blocked: the run fails first at {a.other.label()} ({a.evidence}), whose fix " \
                           "cannot be combined with the others"
                    break
                fixes = fixes | {a.other.key}
                continue
            break
        reached = self.ran_flagged(result, finding, fixes) and self._source_ran(result, finding, fixes)
        if a.kind in ("other", "elsewhere") and reached:
            where = f" at {_short(a.where[0])}:{a.where[1]}" if a.where else ""
            return Outcome("not-reproduced", spec, result, a, fixes,
                           f"the flagged line ran clean; the run failed later: {a.evidence}{where}")
        if a.kind == "other":
            return Outcome("not-run", spec, result, a, fixes,
                           note or f"blocked: the run fails first at {a.other.label()} ({a.evidence}), which has no fix",
                           unreached=True)
        if a.kind == "elsewhere":
            where = f" at {_short(a.where[0])}:{a.where[1]}" if a.where else ""
            return Outcome("not-run", spec, result, a, fixes,
                           f"blocked: the run fails first with a dtype error no finding names: {a.evidence}{where}",
                           unreached=True)
        if result.stage in ("import", "build") or (result.error and not result.dtype_error):
            note = f"{result.error_type}: {result.error}"
            if _out_of_memory(result):
                note = f"the module exhausted the memory limit ({self.job.memory_mb} MiB): {note}"
            if result.device == "fake-cuda" and result.stage == "run":
                note += " (fake CUDA tensors cannot run this; a CUDA machine can: --device cuda)"
            return Outcome("not-run", spec, result, a, fixes, note)
        if not self.ran_flagged(result, finding, fixes):
            return Outcome("not-run", spec, result, a, fixes, "the flagged line never ran with these inputs",
                           unreached=True)
        if not self._source_ran(result, finding, fixes):
            return Outcome("not-run", spec, result, a, fixes,
                           f"the float32 source of the dataflow path (line {finding.steps[0][1]}) never ran: this "
                           "module alone gets compute-dtype inputs", unreached=True)
        return Outcome("not-reproduced", spec, result, a, fixes,
                       f"ran clean through the flagged line (output {result.output_dtype})")

    def _check_fix(self, finding: FindingRef, regime: str, spec: HarnessSpec, context: frozenset,
                   out: VerifyResult) -> None:
        if finding.fix is None:
            out.fixed, out.fix_detail = None, "no fix proposed"
            return
        fixes = context | {finding.key}
        result = None
        for _ in range(MAX_CONTEXT + 1):
            try:
                self.variant(fixes)
            except FixError as exc:
                out.fixed, out.fix_detail = False, str(exc)
                return
            result = self.run(spec, regime, fixes, reference=True)
            a = self.attribute(result, finding, fixes)
            if (not result.ok and a.kind == "other" and a.other.fix is not None and a.other.key not in fixes):
                try:
                    self.variant(fixes | {a.other.key})
                except FixError:
                    break
                fixes = fixes | {a.other.key}
                continue
            break
        out.with_fixes = [self.by_key[k].label() for k in sorted(fixes - {finding.key})]
        out.output_dtype = result.output_dtype
        out.max_abs_err, out.max_rel_err = result.max_abs_err, result.max_rel_err
        a = self.attribute(result, finding, fixes)
        if not result.ok or a.kind in ("finding", "other", "path", "elsewhere"):
            where = f" at {_short(a.where[0])}:{a.where[1]}" if a.where else ""
            evidence = a.evidence or f"{result.error_type}: {result.error}"
            out.fixed, out.fix_detail = False, f"still fails: {evidence}{where}"
            return
        compute = str(self.compute)
        note = ""
        if regime in ("half", "loaded") and out.output_dtype not in (None, compute) and \
                out.output_dtype.startswith("torch.float"):
            if not (regime == "loaded" and result.kept_fp32 and out.output_dtype == "torch.float32"):
                out.fixed, out.fix_detail = False, f"runs, but returns {out.output_dtype}, not {compute}"
                return
            note = " (from parameters the loader keeps in float32)"
        out.fixed = True
        detail = f"runs clean, returns {out.output_dtype}{note}"
        if result.nonfinite:
            detail += "; the output holds NaN/inf"
        elif out.max_abs_err is not None:
            detail += f", max abs err {out.max_abs_err:.2g}"
            if out.max_rel_err is not None:
                detail += f" (rel {out.max_rel_err:.2g})"
            detail += " against fp32"
        out.fix_detail = detail


def verify_job(job: ModuleJob):
    """Yield a VerifyResult for each finding of the job in each of its regimes."""
    session = Session(job)
    try:
        for finding in job.findings:
            for regime in job.regimes.get(finding.key, finding.regimes):
                yield session.verify(finding, regime)
    finally:
        import shutil

        from dtypelint.verify.build import clear_checkpoints

        clear_checkpoints()
        shutil.rmtree(session.tmp, ignore_errors=True)
        importlib.invalidate_caches()
