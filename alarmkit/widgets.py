"""``alarmkit.widgets`` is ``alarmkit.viz.widgets``, its home in the viz wing; this path stays for users."""

import sys

from .viz import widgets as _home

sys.modules[__name__] = _home
