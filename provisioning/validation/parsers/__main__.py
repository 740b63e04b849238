"""``python -m provisioning.validation.parsers KIND FILE`` (see ``cli``)."""

import sys

from provisioning.validation.parsers.cli import main

sys.exit(main())
