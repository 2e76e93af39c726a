"""``alarmkit.plots`` is ``alarmkit.viz.plots``, its home in the viz wing; this path stays for users."""

import sys

from .viz import plots as _home

sys.modules[__name__] = _home
