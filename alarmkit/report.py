"""``alarmkit.report`` is ``alarmkit.viz.report``, its home in the viz wing; this path stays for users."""

import sys

from .viz import report as _home

sys.modules[__name__] = _home
