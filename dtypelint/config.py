"""Configuration: ``[tool.dtypelint]`` in ``pyproject.toml`` or a ``dtypelint.toml``.

The nearest configuration file upward from each linted file applies (ruff's model).
Every key is validated; a bad file is a usage error (exit 2) with a one-line message
naming the key and the file.  ``Settings`` is immutable and hashable into the cache key.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from dtypelint.diagnostics import REGIMES

CONFIG_NAMES = ("dtypelint.toml", ".dtypelint.toml", "pyproject.toml")
COMPUTE_DTYPES = ("float16", "bfloat16")
SINK_CONTRACTS = ("equal-dtypes", "half-only")
DEFAULT_EXCLUDES = (
    ".bzr", ".direnv", ".eggs", ".git", ".hg", ".mypy_cache", ".nox", ".pants.d", ".pytype",
    ".ruff_cache", ".dtypelint_cache", ".svn", ".tox", ".venv", "__pypackages__", "__pycache__",
    "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)

KNOWN_KEYS = {
    "select": list,
    "ignore": list,
    "extend-select": list,
    "extend-ignore": list,
    "per-file-ignores": dict,
    "exclude": list,
    "extend-exclude": list,
    "respect-gitignore": bool,
    "regimes": list,
    "compute-dtype": str,
    "sinks": dict,
    "cache-dir": str,
    "verify": dict,
}
VERIFY_KEYS = {"harness": dict, "timeout": (int, float), "memory-limit": int}
DEFAULT_VERIFY_TIMEOUT = 120.0  # seconds per module
DEFAULT_VERIFY_MEMORY_MB = 4096  # address space of each verify child process


class ConfigError(Exception):
    """A configuration problem the user must fix; the CLI exits 2 with this message."""


@dataclass(frozen=True)
class SinkSpec:
    """A user kernel: calls to ``name`` require the ``args`` to satisfy ``contract``."""

    name: str  # qualified name, e.g. "mylib.kernels.chunk_attn"
    contract: str  # "equal-dtypes" | "half-only"
    args: tuple[str, ...]  # parameter names, in positional order
    positions: tuple[int, ...]  # positional index of each name when passed positionally


@dataclass(frozen=True)
class VerifySettings:
    """``[tool.dtypelint.verify]``: how ``dtypelint verify`` builds and runs modules (never read by ``check``)."""

    harness: tuple[tuple[str, str], ...] = ()  # ("pkg.mod:Class", "pkg.harness:make")
    timeout: float = DEFAULT_VERIFY_TIMEOUT
    memory_limit_mb: int = DEFAULT_VERIFY_MEMORY_MB


@dataclass(frozen=True)
class Settings:
    """The effective configuration for one file."""

    root: Path  # folder globs are relative to (the config file's folder, or cwd)
    config_file: Path | None = None
    select: tuple[str, ...] | None = None  # None: the default rule set
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    regimes: tuple[str, ...] = REGIMES
    compute_dtype: str = "float16"
    sinks: tuple[SinkSpec, ...] = ()
    cache_dir: Path | None = None
    verify: VerifySettings = VerifySettings()

    # -- rule selection ------------------------------------------------------------
    def enabled_codes(self, all_codes: dict[str, bool], relpath: str | None = None) -> frozenset[str]:
        """Codes enabled for a file. ``all_codes`` maps each code to its default-on flag."""
        if self.select is None:
            enabled = {c for c, on in all_codes.items() if on}
        else:
            enabled = set(expand_codes(self.select, all_codes))
        enabled |= set(expand_codes(self.extend_select, all_codes))
        enabled -= set(expand_codes(self.ignore, all_codes))
        if relpath is not None:
            for pattern, codes in self.per_file_ignores:
                if glob_match(pattern, relpath):
                    enabled -= set(expand_codes(codes, all_codes))
        return frozenset(enabled)

    def analysis_fingerprint(self) -> str:
        """Hash of everything that can change a file's diagnostics (for the cache key)."""
        data = {
            "select": self.select,
            "extend_select": self.extend_select,
            "ignore": self.ignore,
            "pfi": self.per_file_ignores,
            "regimes": self.regimes,
            "compute": self.compute_dtype,
            "sinks": [(s.name, s.contract, s.args, s.positions) for s in self.sinks],
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=list).encode()).hexdigest()[:32]

    def relpath(self, path: Path) -> str:
        """``path`` relative to the settings root, POSIX style (for globs)."""
        try:
            real = Path(os.path.realpath(path))  # never raises, not even on a symlink loop
            return PurePosixPath(real.relative_to(os.path.realpath(self.root))).as_posix()
        except ValueError:
            return path.as_posix()

    def is_excluded(self, path: Path) -> bool:
        rel = self.relpath(path)
        for pattern in self.exclude + self.extend_exclude:
            if glob_match(pattern, rel):
                return True
        return False


def glob_match(pattern: str, relpath: str) -> bool:
    """Match a ruff-style glob against a relative POSIX path.

    A pattern without ``/`` matches any path component (``build`` excludes every
    ``build`` folder, ``*_pb2.py`` any such file); with ``/`` it matches the path
    from the root, and ``**`` spans folders.  A folder pattern also covers files below it.
    """
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    parts = relpath.split("/")
    if "/" not in pattern.rstrip("/"):
        pat = pattern.rstrip("/")
        return any(fnmatch.fnmatchcase(part, pat) for part in parts)
    pat = pattern.rstrip("/")
    if _glob_path(pat, relpath):
        return True
    # A folder pattern covers everything below it.
    for i in range(1, len(parts)):
        if _glob_path(pat, "/".join(parts[:i])):
            return True
    return False


def _glob_path(pattern: str, path: str) -> bool:
    pp = pattern.split("/")
    sp = path.split("/")

    def rec(i: int, j: int) -> bool:
        if i == len(pp):
            return j == len(sp)
        if pp[i] == "**":
            return any(rec(i + 1, k) for k in range(j, len(sp) + 1))
        return j < len(sp) and fnmatch.fnmatchcase(sp[j], pp[i]) and rec(i + 1, j + 1)

    return rec(0, 0)


def expand_codes(selectors: tuple[str, ...] | list[str], all_codes: dict[str, bool]) -> list[str]:
    """Expand ``ALL`` and code prefixes (``DTL1``) into codes; unknown selectors raise."""
    out: list[str] = []
    for sel in selectors:
        s = sel.strip().upper()
        if s == "ALL":
            out.extend(all_codes)
            continue
        matched = [c for c in all_codes if c.startswith(s)] if s.startswith("DTL") else []
        if not matched:
            raise ConfigError(f"unknown rule selector {sel!r}")
        out.extend(matched)
    return out


# -- loading -------------------------------------------------------------------------


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from exc


def table_of(path: Path) -> dict[str, Any] | None:
    """The dtypelint table of a config file, or None if the file has none (pyproject)."""
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict) or "dtypelint" not in tool:
            return None
        table = tool["dtypelint"]
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.dtypelint] must be a table")
        return table
    return data


def _where(path: Path) -> str:
    return f"{path}: [tool.dtypelint]" if path.name == "pyproject.toml" else f"{path}:"


def settings_from_table(table: dict[str, Any], path: Path | None, root: Path,
                        known_codes: dict[str, bool]) -> Settings:
    """Validate a config table and build Settings; raise ConfigError naming key and file."""
    where = _where(path) if path else "configuration:"
    for key, value in table.items():
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{where} unknown key {key!r}")
        expected = KNOWN_KEYS[key]
        if not isinstance(value, expected):
            raise ConfigError(
                f"{where} key {key!r} must be a {expected.__name__}, got {type(value).__name__}"
            )

    def strs(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} key {key!r} must be a list of strings")
        return tuple(value)

    def codes(key: str) -> tuple[str, ...]:
        values = strs(key)
        try:
            expand_codes(values, known_codes)
        except ConfigError as exc:
            raise ConfigError(f"{where} key {key!r}: {exc}") from None
        return values

    s = Settings(root=root, config_file=path)
    changes: dict[str, Any] = {}
    if "select" in table:
        changes["select"] = codes("select")
    for key, attr in (("extend-select", "extend_select"), ("ignore", "ignore")):
        if key in table:
            changes[attr] = codes(key)
    if "extend-ignore" in table:
        changes["ignore"] = changes.get("ignore", ()) + codes("extend-ignore")
    if "exclude" in table:
        changes["exclude"] = strs("exclude")
    if "extend-exclude" in table:
        changes["extend_exclude"] = strs("extend-exclude")
    if "respect-gitignore" in table:
        changes["respect_gitignore"] = table["respect-gitignore"]
    if "per-file-ignores" in table:
        pfi = []
        for pattern, value in table["per-file-ignores"].items():
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where} key 'per-file-ignores.{pattern}' must be a list of rule codes")
            try:
                expand_codes(value, known_codes)
            except ConfigError as exc:
                raise ConfigError(f"{where} key 'per-file-ignores.{pattern}': {exc}") from None
            pfi.append((pattern, tuple(value)))
        changes["per_file_ignores"] = tuple(pfi)
    if "regimes" in table:
        regimes = strs("regimes")
        bad = [r for r in regimes if r not in REGIMES]
        if bad or not regimes:
            raise ConfigError(
                f"{where} key 'regimes': unknown regime {bad[0]!r}; expected some of {', '.join(REGIMES)}"
                if bad else f"{where} key 'regimes' must not be empty"
            )
        changes["regimes"] = tuple(dict.fromkeys(regimes))
    if "compute-dtype" in table:
        cd = table["compute-dtype"].replace("torch.", "")
        cd = {"fp16": "float16", "half": "float16", "bf16": "bfloat16"}.get(cd, cd)
        if cd not in COMPUTE_DTYPES:
            raise ConfigError(
                f"{where} key 'compute-dtype' must be one of float16, bfloat16; got {table['compute-dtype']!r}"
            )
        changes["compute_dtype"] = cd
    if "sinks" in table:
        changes["sinks"] = tuple(_parse_sink(name, spec, where) for name, spec in table["sinks"].items())
    if "cache-dir" in table:
        cd_path = Path(table["cache-dir"]).expanduser()
        changes["cache_dir"] = cd_path if cd_path.is_absolute() else root / cd_path
    if "verify" in table:
        changes["verify"] = _parse_verify(table["verify"], where)
    return replace(s, **changes)


_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def _parse_verify(table: dict[str, Any], where: str) -> VerifySettings:
    for key, value in table.items():
        if key not in VERIFY_KEYS:
            raise ConfigError(f"{where} unknown key 'verify.{key}'")
        expected = VERIFY_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, expected):
            kind = {(int, float): "a number", int: "an integer", dict: "a table"}[expected]
            raise ConfigError(f"{where} key 'verify.{key}' must be {kind}, got {type(value).__name__}")
    harness = []
    for target, factory in table.get("harness", {}).items():
        if not _TARGET.match(target):
            raise ConfigError(f"{where} key 'verify.harness': {target!r} must name a class as \"package.module:Class\"")
        if not isinstance(factory, str) or not _TARGET.match(factory):
            raise ConfigError(f"{where} key 'verify.harness.{target}' must name a factory as \"package.module:function\"")
        harness.append((target, factory))
    timeout = float(table.get("timeout", DEFAULT_VERIFY_TIMEOUT))
    if not timeout > 0:
        raise ConfigError(f"{where} key 'verify.timeout' must be a positive number of seconds")
    memory = table.get("memory-limit", DEFAULT_VERIFY_MEMORY_MB)
    if memory < 256:
        raise ConfigError(f"{where} key 'verify.memory-limit' must be at least 256 (MiB)")
    return VerifySettings(harness=tuple(harness), timeout=timeout, memory_limit_mb=memory)


def _parse_sink(name: str, spec: Any, where: str) -> SinkSpec:
    key = f"sinks.{name}"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} key {key!r} must be a table like {{ contract = \"equal-dtypes\", args = [\"q\", \"k\", \"v\"] }}")
    unknown = set(spec) - {"contract", "args", "positions"}
    if unknown:
        raise ConfigError(f"{where} unknown key {key + '.' + sorted(unknown)[0]!r}")
    contract = spec.get("contract")
    if contract not in SINK_CONTRACTS:
        raise ConfigError(f"{where} key '{key}.contract' must be one of {', '.join(SINK_CONTRACTS)}")
    args = spec.get("args")
    if not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where} key '{key}.args' must be a non-empty list of parameter names")
    positions = spec.get("positions", list(range(len(args))))
    if (not isinstance(positions, list) or len(positions) != len(args)
            or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in positions)):
        raise ConfigError(f"{where} key '{key}.positions' must be a list of {len(args)} non-negative integers")
    return SinkSpec(name=name, contract=contract, args=tuple(args), positions=tuple(positions))


# Settings field -> the configuration keys that set it (for --show-settings).
FIELD_KEYS: dict[str, tuple[str, ...]] = {
    "select": ("select",),
    "extend_select": ("extend-select",),
    "ignore": ("ignore", "extend-ignore"),
    "per_file_ignores": ("per-file-ignores",),
    "exclude": ("exclude",),
    "extend_exclude": ("extend-exclude",),
    "respect_gitignore": ("respect-gitignore",),
    "regimes": ("regimes",),
    "compute_dtype": ("compute-dtype",),
    "sinks": ("sinks",),
    "cache_dir": ("cache-dir",),
}


def provenance(settings: Settings, cli: dict[str, Any]) -> dict[str, str]:
    """Where each setting's value came from: ``command line``, the configuration file, or ``default``."""
    table: dict[str, Any] = {}
    if settings.config_file is not None:
        try:
            table = table_of(settings.config_file) or {}
        except ConfigError:
            table = {}
    out = {}
    for name, keys in FIELD_KEYS.items():
        if name in cli:
            out[name] = "command line"
        elif any(k in table for k in keys):
            out[name] = _where(settings.config_file).rstrip(":")  # type: ignore[arg-type]
        else:
            out[name] = "default"
    return out


@dataclass
class ConfigResolver:
    """Finds and caches the Settings that apply to each folder.

    ``override``: settings from ``--config FILE`` (used for every file);
    ``isolated``: ignore configuration files; ``cli``: command-line overrides applied last.
    """

    known_codes: dict[str, bool]
    cwd: Path = field(default_factory=Path.cwd)
    config_file: Path | None = None
    isolated: bool = False
    cli: dict[str, Any] = field(default_factory=dict)
    _by_dir: dict[Path, Settings] = field(default_factory=dict)
    _by_file: dict[Path, Settings] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._fixed: Settings | None = None
        if self.isolated:
            self._fixed = self._apply_cli(Settings(root=self.cwd))
        elif self.config_file is not None:
            path = self.config_file
            if not path.is_file():
                raise ConfigError(f"{path}: configuration file not found")
            table = table_of(path)
            if table is None:
                table = {}
            self._fixed = self._apply_cli(settings_from_table(table, path, path.resolve().parent, self.known_codes))

    def _apply_cli(self, s: Settings) -> Settings:
        if not self.cli:
            return s
        return replace(s, **self.cli)

    def for_path(self, path: Path) -> Settings:
        """Settings for a file or folder (a file uses its folder's settings)."""
        if self._fixed is not None:
            return self._fixed
        folder = path if path.is_dir() else path.parent
        return self._for_dir(Path(os.path.realpath(folder)))

    def _for_dir(self, folder: Path) -> Settings:
        if folder in self._by_dir:
            return self._by_dir[folder]
        found: Settings | None = None
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_file():
                table = table_of(candidate)
                if table is None:
                    continue
                found = self._apply_cli(settings_from_table(table, candidate, folder, self.known_codes))
                break
        if found is None:
            parent = folder.parent
            if parent == folder:
                found = self._apply_cli(Settings(root=self.cwd))
            else:
                found = self._for_dir(parent)
        self._by_dir[folder] = found
        return found
