"""Entry point: ``python -m portalctl`` and the ``portalctl`` script."""

import sys

from portalctl.cli import main

if __name__ == "__main__":
    sys.exit(main())
