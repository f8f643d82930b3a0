"""Fields of a model's config.json, found at the top level or in a text/language sub-config."""

from __future__ import annotations

from typing import Any, Mapping

# Multimodal targets (Kimi-K2.5, Qwen-VL, ...) keep the language model's fields in a sub-config.
_TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config")


def config_field(config: Mapping[str, Any], key: str) -> Any:
    """`config[key]`, else the same key in a text/language sub-config."""
    if key in config:
        return config[key]
    for sub in _TEXT_CONFIG_KEYS:
        nested = config.get(sub)
        if isinstance(nested, Mapping) and key in nested:
            return nested[key]
    return None
