"""exactserve: deterministic, bit-reproducible inference for GGUF models.

The distribution installs one top-level package, `exactserve`, whose subpackages are the
repository's layer folders: `exactserve.kernels` is kernels/, `exactserve.runtime` is
runtime/, and so on (pyproject.toml maps each folder with setuptools' `package-dir`). In a
wheel they sit beside this file; in a source checkout they are its siblings, so the checkout
adds its root to this package's search path and `python -m pytest` tests the checkout's
own code even when another copy of exactserve is installed.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

_checkout = Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "runtime" / "__init__.py").is_file():
    __path__.append(str(_checkout))  # type: ignore[name-defined]  # noqa: F821
