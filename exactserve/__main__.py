"""`python -m exactserve` is the `exactserve` command."""

import sys

from exactserve.server.cli import main

sys.exit(main())
