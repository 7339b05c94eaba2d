"""`python -m estimator.validate [--json]`: the accuracy report (report.main)."""

import sys

from estimator.validate.report import main

sys.exit(main())
