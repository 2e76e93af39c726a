"""``alarmkit.faults`` is ``alarmkit.runtime.faults``, its home in the runtime wing; this path stays for users."""

import sys

from .runtime import faults as _home

sys.modules[__name__] = _home
