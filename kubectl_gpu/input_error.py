"""The one error for input a person must fix: a file that cannot be read, is not YAML/JSON, or
holds nothing the command can use.  The message says what to change.

A leaf module, so every reader of input (manifests, the explain command) raises the same type
without importing the others; the CLI shows it as `error: <message>` with exit code 2 (usage).
"""

from __future__ import annotations


class InputError(Exception):
    """Input that cannot be used as given; the message says what to change."""
