"""``[tool.dtypelint.verify]``: validated like the other keys, never part of what ``check`` caches on."""

from __future__ import annotations

from pathlib import Path

import pytest

from dtypelint.config import ConfigError, Settings, VerifySettings, settings_from_table
from dtypelint.engine import known_codes


def parse(table: dict) -> Settings:
    return settings_from_table(table, Path("/p/pyproject.toml"), Path("/p"), known_codes())


def test_the_section_is_read():
    s = parse({"verify": {"harness": {"pkg.models.attn:Attention": "tests.harness:make_attention"},
                          "timeout": 30, "memory-limit": 2048}})
    assert s.verify == VerifySettings(harness=(("pkg.models.attn:Attention", "tests.harness:make_attention"),),
                                      timeout=30.0, memory_limit_mb=2048)
    assert parse({}).verify == VerifySettings()  # defaults: no factories, 120 s, 4096 MiB


@pytest.mark.parametrize("table, message", [
    ({"verify": []}, "key 'verify' must be a dict"),
    ({"verify": {"timeot": 3}}, "unknown key 'verify.timeot'"),
    ({"verify": {"timeout": "3"}}, "key 'verify.timeout' must be a number, got str"),
    ({"verify": {"timeout": True}}, "key 'verify.timeout' must be a number, got bool"),
    ({"verify": {"timeout": 0}}, "key 'verify.timeout' must be a positive number"),
    ({"verify": {"memory-limit": 100}}, "key 'verify.memory-limit' must be at least 256"),
    ({"verify": {"memory-limit": 2.5}}, "key 'verify.memory-limit' must be an integer, got float"),
    ({"verify": {"harness": {"Attention": "h:make"}}}, "'Attention' must name a class as \"package.module:Class\""),
    ({"verify": {"harness": {"m:Attention": "make"}}}, "key 'verify.harness.m:Attention' must name a factory"),
    ({"verify": {"harness": {"m:Attention": 3}}}, "key 'verify.harness.m:Attention' must name a factory"),
])
def test_bad_values_name_the_key_and_the_file(table, message):
    with pytest.raises(ConfigError) as err:
        parse(table)
    assert message in str(err.value) and "/p/pyproject.toml" in str(err.value)


def test_verify_settings_do_not_change_the_check_cache_key():
    assert parse({}).analysis_fingerprint() == parse({"verify": {"timeout": 5}}).analysis_fingerprint()
