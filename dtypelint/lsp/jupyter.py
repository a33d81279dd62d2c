"""The ``jupyter-lsp`` server spec: JupyterLab users with ``jupyterlab-lsp`` get dtypelint's diagnostics
without configuring anything.

``jupyter-lsp`` (the Jupyter server extension behind ``jupyterlab-lsp``) finds language servers
through the ``jupyter_lsp_spec_v1`` entry point group: each entry is a callable that takes the
server's manager and returns ``{key: spec}``, validated against jupyter-lsp's spec schema
(``version``, ``argv``, ``languages`` required).  An optional ``is_installed(manager)`` lets it skip
servers that could not start.  This module must import nothing heavy: the Jupyter server loads it.

jupyterlab-lsp joins a notebook's cells into one Python document (``….ipynb``, language ``python``)
and maps the diagnostics back to cells itself; ``dtypelint lsp`` lints such a document as Python.
"""

from __future__ import annotations

import importlib.util
import sys

SPEC_VERSION = 2  # jupyter-lsp's current spec schema version
KEY = "dtypelint"


class DtypelintSpec:
    """Spec finder for ``dtypelint lsp`` (registered as ``jupyter_lsp_spec_v1: dtypelint``)."""

    key = KEY

    def is_installed(self, manager=None) -> bool:
        """The server can start only with the ``lsp`` extra (pygls, lsprotocol) in this environment."""
        return all(importlib.util.find_spec(name) is not None for name in ("pygls", "lsprotocol"))

    def __call__(self, manager=None) -> dict:
        installed = self.is_installed(manager)
        spec = {
            "version": SPEC_VERSION,
            "display_name": "dtypelint",
            # the Python of the Jupyter server: the environment dtypelint is installed in
            "argv": [sys.executable, "-m", "dtypelint", "lsp"] if installed else [],
            "languages": ["python"],
            "mime_types": ["text/python", "text/x-ipython"],
            "requires_documents_on_disk": False,  # the server lints the unsaved text it is sent
            "urls": {
                "home": "https://dtypelint.readthedocs.io/en/latest/editors/",
                "issues": "https://github.com/dtypelint/dtypelint/issues",
            },
            "install": {"pip": "pip install 'dtypelint[lsp]'"},
            "env": {"PYTHONUNBUFFERED": "1"},
        }
        if not installed:
            spec["troubleshoot"] = "dtypelint's language server needs the `lsp` extra: pip install 'dtypelint[lsp]'"
        return {self.key: spec}


spec = DtypelintSpec()
