"""Helpers for method ``Config`` dataclasses: validation in ``__post_init__``."""

from __future__ import annotations

import dataclasses
from typing import Any

from uqzoo._validation import check_choice, check_float, check_int

__all__ = ["check_choice", "check_float", "check_int", "config_dict", "set_field"]


def config_dict(config: Any) -> dict:
    """The config as a plain dict (what a Posterior stores and saves)."""
    return dataclasses.asdict(config)


def set_field(config: Any, name: str, value: Any) -> None:
    """Replace a field of a frozen config during ``__post_init__`` (normalisation)."""
    object.__setattr__(config, name, value)
