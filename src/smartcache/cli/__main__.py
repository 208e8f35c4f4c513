"""``python -m smartcache.cli``: the same command line as the ``smartcache`` script."""

import sys

from smartcache.cli import main

sys.exit(main())
