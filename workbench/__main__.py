"""`python -m workbench`: the same as the `workbench` console script."""

import sys

from workbench.entry import main

sys.exit(main())
