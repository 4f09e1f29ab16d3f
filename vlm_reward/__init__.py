"""The VLM reward server and its client, installable on their own (pip install '.[hf]' / '.[vllm]').

Importing this package is cheap: it never imports torch, transformers or vLLM.
Those are imported by the backend that needs them, when it is loaded.
"""

from __future__ import annotations

__version__ = "0.1.0"
