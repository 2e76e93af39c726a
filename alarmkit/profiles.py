"""``alarmkit.profiles`` is ``alarmkit.runtime.profiles``, its home in the runtime wing; this path stays for users."""

import sys

from .runtime import profiles as _home

sys.modules[__name__] = _home
