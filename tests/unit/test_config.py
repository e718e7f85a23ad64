"""Settings are validated however they are built: from the environment or in Python."""

from __future__ import annotations

from typing import Any

import pytest

from hivekeep import Settings, ValidationError
from hivekeep.config import SETTINGS


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"rrf_k": 0}, "MEMORY_RRF_K"),
        ({"rrf_k": "10"}, "expected int"),
        ({"recall_limit": True}, "MEMORY_MAX_RELEVANT"),
        ({"recall_limit": 2.5}, "MEMORY_MAX_RELEVANT"),
        ({"dedup_threshold": 5.0}, "between -1 and 1"),
        ({"similarity_floor": "high"}, "MEMORY_SIMILARITY_THRESHOLD"),
        ({"fts_weight": -1.0}, "must be >= 0"),
        ({"profile_max_tokens": -5}, "positive integer"),
        ({"llm": "gpt-4o"}, "provider:model"),
        ({"db": None}, "HIVEKEEP_DB"),
        ({"compacting_keep_percent": 150.0}, "percentage"),
        ({"allowed_hosts": ("http://evil.example/",)}, "no scheme"),
        ({"allowed_hosts": "memory.example.com"}, "expected tuple"),
    ],
)
def test_settings_built_in_python_are_validated(changes: dict[str, Any], says: str) -> None:
    # the finding: a bad value surfaced later, as a bare ValueError out of call_tool
    with pytest.raises(ValidationError, match=says):
        Settings(**changes)
    with pytest.raises(ValidationError, match=says):
        Settings().with_overrides(**changes)


def test_good_values_pass_and_host_lists_are_normalised() -> None:
    hosts: Any = ["A.example:80"]  # a list is accepted too
    settings = Settings(rrf_k=10, similarity_floor=0, fts_weight=1, allowed_hosts=hosts)
    assert settings.allowed_hosts == ("a.example:80",)
    env = Settings.from_env({"HIVEKEEP_ALLOWED_HOSTS": "a.example, [::1]:9000,"})
    assert env.allowed_hosts == ("a.example", "[::1]:9000")


def test_every_setting_has_a_field_with_its_default() -> None:
    defaults = Settings()
    for setting in SETTINGS:
        assert getattr(defaults, setting.field) == setting.default, setting.env


def test_log_format_is_text_or_json() -> None:
    assert Settings.from_env({}).log_format == "text"
    assert Settings.from_env({"HIVEKEEP_LOG_FORMAT": " JSON "}).log_format == "json"
    with pytest.raises(ValidationError, match="HIVEKEEP_LOG_FORMAT"):
        Settings.from_env({"HIVEKEEP_LOG_FORMAT": "yaml"})
