"""Editor integration: ``dtypelint lsp`` (a pygls Language Server) and the LSP data conversions.

``convert`` is pure Python (no pygls), shared by the server and ``--output-format lsp``;
``server`` needs the optional ``lsp`` extra (pygls, lsprotocol).
"""
