"""``python -m pbdcloth.cli``: the ``pbdcloth`` command."""

import sys

from .main import main

sys.exit(main())
