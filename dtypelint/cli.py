"""Command-line interface: ``dtypelint check | verify | rules | rule | lsp | clean``.

Exit codes: 0 no findings, 1 findings, 2 usage or configuration error or a failure
of dtypelint itself (``--exit-zero`` turns 1 into 0).
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import click

from dtypelint import __version__

# Everything else is imported where it is used, so `--version`, `--help` and a one-file
# pre-commit run start fast (rich, the engine and the analysis are not free to import).

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class UsageError(click.UsageError):
    exit_code = EXIT_ERROR


class _ReporterChoice(click.Choice):
    """``--output-format``'s choices, read from the reporters only when click needs them (lazy import)."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self):
        from dtypelint.reporters import REPORTERS

        return tuple(sorted(REPORTERS))

    @choices.setter
    def choices(self, value) -> None:
        pass


def use_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"dtypelint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="dtypelint", message="%(prog)s %(version)s")
def cli() -> None:
    """Find mixed-precision dtype hazards in PyTorch model code, and fix them.

    Run `dtypelint check` in a repository; `dtypelint rules` lists what it looks for.
    """


def _codes_option(value: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for item in value:
        out.extend(part.strip() for part in item.split(",") if part.strip())
    return tuple(out)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--output-format", "output_format", envvar="DTYPELINT_OUTPUT_FORMAT", default="full",
              show_default=True, type=_ReporterChoice(), help="How findings are reported.")
@click.option("-o", "--output-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report to this file instead of standard output.")
@click.option("--select", multiple=True, metavar="CODES", help="Rules to enable (codes or prefixes, comma-separated; ALL); replaces the configured set.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to enable in addition to the configured set.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable.")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Use this configuration file (pyproject.toml or dtypelint.toml) for every file.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: the number of cores).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), envvar="DTYPELINT_CACHE_DIR",
              help="Where the result cache lives (default: .dtypelint_cache in the working folder).")
@click.option("--stdin-filename", metavar="PATH", help="The name of the file read from standard input ('-'), for reports and configuration.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (2 still means dtypelint failed).")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary line or progress.")
@click.option("--in-process", is_flag=True, hidden=True, help="Analyse in this process (tests; no crash isolation).")
@click.option("--fix", is_flag=True, help="Apply safe fixes (files are rewritten atomically; '-' writes the fixed source to stdout).")
@click.option("--unsafe-fixes", is_flag=True, help="Also offer and apply fixes marked unsafe (they may change behaviour).")
@click.option("--diff", is_flag=True, help="Print a unified diff of what --fix would change and write nothing (exit 1 if anything would change).")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied (with --diff: that would be applied).")
@click.option("--fix-only", is_flag=True, help="Apply fixes but do not report the findings that remain (implies --fix).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when any fix was applied, even if no findings remain.")
@click.option("--no-default-paths", is_flag=True,
              help="With no PATHS, check nothing (instead of the current folder): for hooks that pass file names.")
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="Report only findings that are not recorded in this baseline file.")
@click.option("--write-baseline", "write_baseline_file", type=click.Path(path_type=Path, dir_okay=False),
              metavar="FILE", help="Record every current finding in FILE and exit 0.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule (and how many are fixable) instead of the findings.")
@click.option("--show-settings", is_flag=True, help="Print the effective settings for the first PATH, where each value came from, and exit.")
def check(paths: tuple[Path, ...], output_format: str, output_file: Path | None, select, extend_select, ignore,
          config_file: Path | None, isolated: bool, jobs: int | None, no_cache: bool, cache_dir: Path | None,
          stdin_filename: str | None, exit_zero: bool, quiet: bool, in_process: bool, fix: bool = False,
          unsafe_fixes: bool = False, diff: bool = False, show_fixes: bool = False, fix_only: bool = False,
          exit_non_zero_on_fix: bool = False, no_default_paths: bool = False,
          baseline_file: Path | None = None, write_baseline_file: Path | None = None, statistics: bool = False,
          show_settings: bool = False) -> None:
    """Check PATHS (files or folders; default: the current folder; '-' reads standard input)."""
    from dtypelint import baseline
    from dtypelint.cache import Cache, default_cache_dir
    from dtypelint.config import ConfigError, ConfigResolver, expand_codes
    from dtypelint.discovery import discover
    from dtypelint.engine import CheckTask, RunOptions, build_tasks, enabled_for, known_codes, problem
    from dtypelint.reporters import Report

    known_fingerprints = None
    if baseline_file is not None and write_baseline_file is None:
        try:
            known_fingerprints = baseline.load_baseline(baseline_file)
        except baseline.BaselineError as exc:
            raise fail(str(exc))
    codes = known_codes()
    cli_overrides: dict = {}
    try:
        if select:
            cli_overrides["select"] = _codes_option(select)
        if extend_select:
            cli_overrides["extend_select"] = _codes_option(extend_select)
        if ignore:
            cli_overrides["ignore"] = _codes_option(ignore)
        for key, value in cli_overrides.items():
            try:
                expand_codes(value, codes)
            except ConfigError as exc:
                raise ConfigError(f"--{key.replace('_', '-')}: {exc}") from None
        resolver = ConfigResolver(known_codes=codes, config_file=config_file, isolated=isolated, cli=cli_overrides)
        paths_list = list(paths) or ([] if no_default_paths else [Path(".")])
        if show_settings:
            _show_settings(resolver, Path(stdin_filename) if paths_list[:1] == [Path("-")] and stdin_filename
                           else (paths_list or [Path(".")])[0], cli_overrides, output_format, output_file)
        stdin_task: CheckTask | None = None
        if any(str(p) == "-" for p in paths_list):
            if len(paths_list) > 1:
                raise UsageError("'-' (standard input) cannot be combined with other paths")
            name = stdin_filename or "-"
            stdin_path = Path(stdin_filename) if stdin_filename else None
            settings = resolver.for_path(stdin_path if stdin_path else Path.cwd())
            relpath = settings.relpath(stdin_path) if stdin_path else name
            stdin_task = CheckTask(path=stdin_path, filename=name, settings=settings,
                                   enabled=enabled_for(settings, relpath), data=sys.stdin.buffer.read(),
                                   module_name=Path(name).stem)
            tasks = [stdin_task]
            problems = []
        else:
            missing = [str(p) for p in paths_list if not (p.exists() or p.is_symlink())]
            if missing:  # a typo in a path is a usage error, not a finding
                raise ConfigError(f"{', '.join(missing)}: no such file or directory")
            found = discover(paths_list, resolver)
            tasks = build_tasks(found.files)
            problems = found.problems
    except ConfigError as exc:
        raise fail(str(exc))

    settings_cache_dir = tasks[0].settings.cache_dir if tasks else None
    cache = Cache(cache_dir or settings_cache_dir or default_cache_dir(), enabled=not no_cache and stdin_task is None)
    options = RunOptions(jobs=jobs or 0, cache=cache, in_process=in_process)
    if fix or fix_only or diff:  # the autofix feature lives in dtypelint.fixer
        from dtypelint.fixer.cli import run_fix_mode

        if write_baseline_file is not None:
            raise UsageError("--write-baseline cannot be combined with --fix, --fix-only or --diff")
        hidden_by_baseline = [0]

        def keep(diags):  # --baseline: report (and fail on) only the findings that are not in it
            if known_fingerprints is None:
                return diags
            new, hidden_by_baseline[0] = baseline.filter_new(diags, baseline_file, known_fingerprints)
            return new

        def make_report(diags, fixed, stdin_text=None):
            r = Report(diagnostics=diags, files_checked=len(tasks), unsafe_fixes=unsafe_fixes, fixed=fixed,
                       baselined=hidden_by_baseline[0])
            if stdin_task is not None and stdin_task.data is not None:
                r.texts[stdin_task.filename] = stdin_text or stdin_task.data.decode("utf-8", errors="replace")
            return r

        problem_diags = [problem("DTL004", _display(p), f"cannot read {p}: {reason}") for p, reason in problems]
        raise click.exceptions.Exit(run_fix_mode(
            tasks=tasks, options=options, problems=problem_diags, stdin_task=stdin_task,
            run=lambda ts, opts: _run_with_progress(ts, opts, show=not quiet and output_file is None and len(ts) > 50),
            unsafe=unsafe_fixes, diff=diff, fix_only=fix_only, show_fixes=show_fixes,
            exit_non_zero_on_fix=exit_non_zero_on_fix, exit_zero=exit_zero, quiet=quiet,
            emit=lambda report, stream: _emit(report, output_format, output_file, quiet, stream, statistics),
            make_report=make_report, keep=keep, roots=None if stdin_task else paths_list))
    result = _run_with_progress(tasks, options, show=not quiet and output_file is None and len(tasks) > 50)

    diagnostics = result.diagnostics
    for path, reason in problems:
        diag = problem("DTL004", _display(path), f"cannot read {path}: {reason}")
        diagnostics.append(diag)
    report = Report(diagnostics=sorted(diagnostics, key=lambda d: d.sort_key()), files_checked=len(tasks),
                    unsafe_fixes=unsafe_fixes)
    if stdin_task is not None and stdin_task.data is not None:
        report.texts[stdin_task.filename] = stdin_task.data.decode("utf-8", errors="replace")
    if write_baseline_file is not None:
        try:
            n = baseline.write_baseline(write_baseline_file, report.diagnostics, report.texts)
        except baseline.BaselineError as exc:
            raise fail(str(exc))
        if not quiet:
            click.echo(f"Recorded {n} {'finding' if n == 1 else 'findings'} in {write_baseline_file}.", err=True)
        raise click.exceptions.Exit(EXIT_CLEAN)
    if known_fingerprints is not None:
        report.diagnostics, report.baselined = baseline.filter_new(
            report.diagnostics, baseline_file, known_fingerprints, report.texts)
    _emit(report, output_format, output_file, quiet, statistics=statistics)
    if exit_zero:
        raise click.exceptions.Exit(EXIT_CLEAN)
    raise click.exceptions.Exit(EXIT_FINDINGS if report.diagnostics else EXIT_CLEAN)


def _display(path: Path) -> str:
    from dtypelint.engine import display_name

    return display_name(path)


def _run_with_progress(tasks, options: RunOptions, show: bool):
    from dtypelint.engine import run

    if not show or not use_color(sys.stderr):
        return run(tasks, options)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=sys.stderr), transient=True) as progress:
        bar = progress.add_task("check", total=len(tasks))
        return run(tasks, options, progress=lambda: progress.advance(bar))


def _show_settings(resolver: ConfigResolver, path: Path, cli_overrides: dict, output_format: str,
                   output_file: Path | None) -> None:
    from dtypelint import show_settings
    from dtypelint.engine import enabled_for

    settings = resolver.for_path(path)
    info = show_settings.describe(path, settings, cli_overrides, enabled_for(settings, settings.relpath(path)))
    buf = io.StringIO()
    show_settings.render(info, buf, as_json=output_format == "json")
    _write_text(buf.getvalue(), output_file)
    raise click.exceptions.Exit(EXIT_CLEAN)


def _write_text(text: str, output_file: Path | None) -> None:
    if output_file is None:
        sys.stdout.write(text)
        return
    try:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        output_file.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write report to {output_file}: {exc.strerror or exc}")


def _emit(report: Report, output_format: str, output_file: Path | None, quiet: bool, stream=None,
          statistics: bool = False) -> None:
    from dtypelint.reporters import REPORTERS

    if statistics:  # the per-rule table replaces the findings (JSON with --output-format json)
        from dtypelint.reporters.statistics import render_statistics

        buf = io.StringIO()
        render_statistics(report, buf, as_json=output_format == "json")
        if output_file is None and stream is not None:
            stream.write(buf.getvalue())
        else:
            _write_text(buf.getvalue(), output_file)
        return
    reporter = REPORTERS[output_format]
    if output_file is not None:
        buf = io.StringIO()
        reporter(report, buf, False)
        text = buf.getvalue()
        try:
            output_file.parent.mkdir(parents=True, exist_ok=True)
            output_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise fail(f"cannot write report to {output_file}: {exc.strerror or exc}")
        return
    stream = stream or sys.stdout
    if quiet and output_format in ("full", "concise"):
        buf = io.StringIO()
        reporter(report, buf, use_color(stream))
        lines = buf.getvalue().splitlines(keepends=True)
        stream.write("".join(lines[:-1]) if lines else "")
        return
    reporter(report, stream, use_color(stream))


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.option("--output-format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules(fmt: str) -> None:
    """List every rule: code, name, summary and whether a fix is available."""
    from dtypelint.catalog import load_catalog

    catalog = load_catalog()
    if fmt == "json":
        import json

        click.echo(json.dumps([
            {"code": r.code, "name": r.name, "summary": r.summary, "severity": r.severity,
             "regimes": list(r.regimes), "fix": r.fix, "url": r.url}
            for r in catalog.values()
        ], indent=2))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, no_color=not use_color(sys.stdout), soft_wrap=not sys.stdout.isatty())
    table = Table(show_lines=False)
    for col in ("Code", "Name", "Summary", "Fix"):
        table.add_column(col, overflow="fold")
    for r in catalog.values():
        table.add_row(r.code, r.name, escape(r.summary), r.fix)
    console.print(table)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Print the documentation of every rule.")
def rule(code: str | None, show_all: bool) -> None:
    """Print the full documentation of rule CODE (e.g. DTL101)."""
    from dtypelint.catalog import load_catalog

    catalog = load_catalog()
    if show_all:
        specs = list(catalog.values())
    elif code is None:
        raise UsageError("give a rule code (e.g. `dtypelint rule DTL101`) or --all")
    else:
        spec = catalog.get(code.strip().upper())
        if spec is None:
            by_name = {r.name: r for r in catalog.values()}
            spec = by_name.get(code.strip())
        if spec is None:
            raise fail(f"unknown rule {code!r}; `dtypelint rules` lists them")
        specs = [spec]
    text = "\n".join(s.render_markdown() + f"\nDocs: {s.url}\n" for s in specs)
    if use_color(sys.stdout):
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        click.echo(text, nl=False)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.option("--no-isolation", is_flag=True, help="Analyse in the server process (faster; a native crash ends the server).")
@click.option("--debounce", type=click.FloatRange(min=0), default=0.3, show_default=True, metavar="SECONDS",
              help="Wait this long after the last edit before analysing the buffer.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True, metavar="SECONDS",
              help="Stop an analysis that takes longer than this (the file gets a DTL005 diagnostic).")
@click.option("--select", multiple=True, metavar="CODES", help="Rules to enable; replaces the configured set (as in `check`).")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to enable in addition to the configured set.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable.")
def lsp(no_isolation: bool, debounce: float, timeout: float, select=(), extend_select=(), ignore=()) -> None:
    """Run the Language Server on standard input/output (needs the `lsp` extra)."""
    overrides = _rule_overrides(select, extend_select, ignore)
    try:
        from dtypelint.lsp.server import start
    except ImportError as exc:
        raise fail(f"`dtypelint lsp` needs the optional `lsp` extra (pygls, lsprotocol): "
                   f"pip install 'dtypelint[lsp]' ({exc})")
    start(isolate=not no_isolation, debounce=debounce, timeout=timeout, rule_overrides=overrides)


def _rule_overrides(select, extend_select, ignore) -> dict:
    """``--select`` / ``--extend-select`` / ``--ignore`` as Settings overrides; an unknown code exits 2."""
    from dtypelint.config import ConfigError, expand_codes
    from dtypelint.engine import known_codes

    overrides = {}
    for key, value in (("select", select), ("extend_select", extend_select), ("ignore", ignore)):
        if value:
            codes = _codes_option(value)
            try:
                expand_codes(codes, known_codes())
            except ConfigError as exc:
                raise fail(f"--{key.replace('_', '-')}: {exc}")
            overrides[key] = codes
    return overrides


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, metavar="CODES", help="Rules whose findings are verified (codes or prefixes, comma-separated).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules whose findings are not verified.")
@click.option("--regime", "regimes", multiple=True, type=click.Choice(["autocast", "half", "loaded"]),
              help="Verify in these regimes only (repeatable; default: every regime a finding names).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Where real kernels run; `autocast` uses fake CUDA tensors on cpu.")
@click.option("--dtype", type=click.Choice(["float16", "bfloat16"]), default=None,
              help="The compute dtype (default: compute-dtype from the configuration, else float16).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="Time limit per module (default: [tool.dtypelint.verify] timeout, else 120).")
@click.option("--memory-limit", type=click.IntRange(min=256), default=None, metavar="MIB",
              help="Address-space limit of each child process (default: [tool.dtypelint.verify] memory-limit, else 4096).")
@click.option("--output-format", "output_format", type=click.Choice(["full", "json"]), default="full",
              show_default=True, help="A table and a line per finding, or JSON.")
@click.option("-o", "--output-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report to this file instead of standard output.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Modules verified in parallel (default: the number of cores, at most 4).")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Use this configuration file for every file.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache of `check`.")
@click.option("-q", "--quiet", is_flag=True, help="No start line or progress.")
def verify(paths: tuple[Path, ...], select, ignore, regimes, device: str, dtype: str | None, timeout: float | None,
           memory_limit: int | None, output_format: str, output_file: Path | None, jobs: int | None,
           config_file: Path | None, isolated: bool, no_cache: bool, quiet: bool) -> None:
    """Execute each finding's module to confirm it and its fix (needs the `verify` extra: torch).

    Runs `check` on PATHS, then, for each finding and each regime it names, runs the flagged
    module in a child process: the original source, then the source with that finding's fix.
    Exit 0 when every finding that ran was reproduced and fixed, 1 otherwise, 2 on a usage error.
    """
    from dtypelint.verify.command import VerifyOptions, run_verify

    options = VerifyOptions(paths=paths, select=_codes_option(select), ignore=_codes_option(ignore),
                            regimes=tuple(regimes), device=device, dtype=dtype, timeout=timeout,
                            memory_limit=memory_limit, output_format=output_format, output_file=output_file,
                            jobs=jobs, config_file=config_file, isolated=isolated, no_cache=no_cache, quiet=quiet)
    raise click.exceptions.Exit(run_verify(options))


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), envvar="DTYPELINT_CACHE_DIR")
def clean(cache_dir: Path | None) -> None:
    """Remove the result cache."""
    from dtypelint.cache import clean as clean_cache, default_cache_dir

    root = cache_dir or default_cache_dir()
    if clean_cache(root):
        click.echo(f"Removed cache at {root}")
    else:
        click.echo(f"No cache at {root}")


def main() -> None:
    try:
        rc = cli.main(prog_name="dtypelint", standalone_mode=False)
        sys.exit(rc if isinstance(rc, int) else EXIT_CLEAN)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_ERROR)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # a bug in dtypelint: say so plainly, exit 2
        import traceback

        traceback.print_exc()
        click.echo(f"dtypelint: internal error: {type(exc).__name__}: {exc}. Please report this as a bug.", err=True)
        sys.exit(EXIT_ERROR)
