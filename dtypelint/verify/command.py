"""``dtypelint verify``: run ``check`` on the paths, then verify each finding by executing it.

This module does not import torch at import time: the CLI imports it lazily, checks that
torch is installed, runs the analysis (worker processes are forked before torch is loaded),
then imports torch once so that the verify children forked afterwards start at once.
"""

from __future__ import annotations

import importlib.util
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from dtypelint.verify.results import VerifyResult, exit_code

INSTALL_HINT = ("`dtypelint verify` runs your models and needs PyTorch, which is not installed here: "
                "pip install 'dtypelint[verify]' (install the torch build you use first, e.g. "
                "pip install torch==2.13.0, so that pip keeps it instead of pulling another one)")
START_LINE = ("dtypelint verify: this executes your project's code (the flagged modules are imported and run "
              "in child processes with a time and memory limit).")


class VerifyUsageError(Exception):
    """Exit 2 with this message."""


@dataclass
class VerifyOptions:
    paths: tuple[Path, ...]
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    regimes: tuple[str, ...] = ()
    device: str = "auto"
    dtype: str | None = None
    timeout: float | None = None
    memory_limit: int | None = None
    output_format: str = "full"
    output_file: Path | None = None
    jobs: int | None = None
    config_file: Path | None = None
    isolated: bool = False
    no_cache: bool = False
    quiet: bool = False


def torch_installed() -> bool:
    if sys.modules.get("torch", 0) is None:  # made unimportable (tests, hardened environments)
        return False
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when a CUDA device is usable, else ``cpu``; ``cuda`` without one is an error."""
    import torch

    available = bool(torch.cuda.is_available())
    if requested == "auto":
        return "cuda" if available else "cpu"
    if requested == "cuda" and not available:
        raise VerifyUsageError("--device cuda: no CUDA device is available (torch.cuda.is_available() is False)")
    return requested


def _findings(options: VerifyOptions):
    """Run ``check``: (diagnostics, tasks by filename, problems)."""
    from dtypelint.cache import Cache, default_cache_dir
    from dtypelint.config import ConfigError, ConfigResolver, expand_codes
    from dtypelint.discovery import discover
    from dtypelint.engine import RunOptions, build_tasks, known_codes, run

    codes = known_codes()
    overrides: dict = {}
    if options.select:
        overrides["select"] = options.select
    if options.ignore:
        overrides["ignore"] = options.ignore
    if options.regimes:
        overrides["regimes"] = tuple(options.regimes)
    if options.dtype:
        overrides["compute_dtype"] = options.dtype
    try:
        for key in ("select", "ignore"):
            if key in overrides:
                try:
                    expand_codes(overrides[key], codes)
                except ConfigError as exc:
                    raise ConfigError(f"--{key}: {exc}") from None
        resolver = ConfigResolver(known_codes=codes, config_file=options.config_file, isolated=options.isolated,
                                  cli=overrides)
        found = discover(list(options.paths) or [Path(".")], resolver)
    except ConfigError as exc:
        raise VerifyUsageError(str(exc)) from None
    tasks = build_tasks(found.files)
    cache_dir = tasks[0].settings.cache_dir if tasks else None
    cache = Cache(cache_dir or default_cache_dir(), enabled=not options.no_cache)
    result = run(tasks, RunOptions(jobs=options.jobs or 0, cache=cache))
    return result.diagnostics, {t.filename: t for t in tasks}, found.problems


def plan_jobs(diagnostics, tasks_by_name, options: VerifyOptions, device: str, parallel: int):
    """One job per module file holding findings; plus the skipped diagnostics (could-not-analyse)."""
    from dtypelint.verify.jobs import FindingRef, ModuleJob, module_of

    # could-not-analyse problems, and training-step findings (no regime: nothing in the model to execute)
    skipped = [d for d in diagnostics if d.code.startswith("DTL0") or not d.regimes]
    real = [d for d in diagnostics if not d.code.startswith("DTL0") and d.regimes]
    refs = []
    for i, d in enumerate(real):
        task = tasks_by_name.get(d.filename)
        if task is None or task.path is None or task.path.suffix != ".py":
            skipped.append(d)
            continue
        refs.append((FindingRef.of(i, d, task.path), task))
    others = [r for r, _ in refs]
    by_file: dict[str, list] = {}
    for ref, task in refs:
        by_file.setdefault(ref.path, []).append((ref, task))
    jobs = []
    for path, items in by_file.items():
        task = items[0][1]
        settings = task.settings
        name, root = module_of(Path(path))
        regimes = {}
        for ref, _ in items:
            chosen = tuple(r for r in ref.regimes if not options.regimes or r in options.regimes)
            regimes[ref.key] = chosen
        jobs.append(ModuleJob(
            path=path, display=task.filename, module_name=name, import_root=str(root),
            project_root=str(settings.root.resolve()), findings=[r for r, _ in items], regimes=regimes,
            others=others, compute_dtype=settings.compute_dtype, device=device, harness=settings.verify.harness,
            user_sinks=settings.sinks, timeout=options.timeout or settings.verify.timeout,
            memory_mb=options.memory_limit or settings.verify.memory_limit_mb))
    return [j for j in jobs if any(j.regimes.values())], skipped


def run_verify(options: VerifyOptions) -> int:
    """The whole command; returns the exit code."""
    from dtypelint.verify.report import RENDERERS

    if not torch_installed():
        click.echo(f"dtypelint: error: {INSTALL_HINT}", err=True)
        return 2
    try:
        diagnostics, tasks, problems = _findings(options)
    except VerifyUsageError as exc:
        click.echo(f"dtypelint: error: {exc}", err=True)
        return 2
    if not options.quiet:
        click.echo(START_LINE, err=True)  # before anything of the project (or torch) is imported
    try:
        import warnings

        from dtypelint.verify.harness import preload

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # torch without numpy
            preload()  # once here, so that forked children start without importing torch
        device = resolve_device(options.device)
    except VerifyUsageError as exc:
        click.echo(f"dtypelint: error: {exc}", err=True)
        return 2
    for path, reason in problems:
        click.echo(f"dtypelint verify: skipped {path}: {reason}", err=True)
    parallel = options.jobs or min(os.cpu_count() or 1, 4)
    jobs, skipped = plan_jobs(diagnostics, tasks, options, device, parallel)
    for d in skipped:
        click.echo(f"dtypelint verify: skipped {d.filename}:{d.start.row}:{d.start.column}: {d.code} {d.message}",
                   err=True)
    results = _run(jobs, parallel, device, options)
    renderer = RENDERERS[options.output_format]
    if options.output_file is not None:
        buf = io.StringIO()
        renderer(results, buf, False)
        try:
            options.output_file.parent.mkdir(parents=True, exist_ok=True)
            options.output_file.write_text(buf.getvalue(), encoding="utf-8")
        except OSError as exc:
            click.echo(f"dtypelint: error: cannot write report to {options.output_file}: {exc.strerror or exc}",
                       err=True)
            return 2
    else:
        from dtypelint.cli import use_color

        renderer(results, sys.stdout, use_color(sys.stdout))
    return exit_code(results)


def _run(jobs, parallel: int, device: str, options: VerifyOptions) -> list[VerifyResult]:
    from dtypelint.verify.runner import run_jobs

    total = sum(len(r) for j in jobs for r in j.regimes.values())
    show = not options.quiet and total > 0 and sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    if not show:
        return run_jobs(jobs, parallel, device)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=sys.stderr), transient=True) as progress:
        bar = progress.add_task("verify", total=total)
        return run_jobs(jobs, parallel, device, on_result=lambda r: progress.advance(bar))
