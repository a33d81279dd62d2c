"""Allow ``python -m dtypelint``.

``python -m`` puts the working folder first on ``sys.path``; when that folder is the
project being linted, a ``json.py`` or ``click.py`` in it would be imported in place of
the real module and run.  It is dropped before anything else is imported (unless
dtypelint itself is being run from that folder, as in a source checkout).
"""

import os
import sys

if sys.path and not getattr(sys.flags, "safe_path", False):
    _first = os.path.abspath(sys.path[0] or os.curdir)
    _home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if _first == os.path.abspath(os.curdir) and _first != _home:
        del sys.path[0]

from dtypelint.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
