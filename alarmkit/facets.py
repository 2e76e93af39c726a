"""``alarmkit.facets`` is ``alarmkit.runtime.facets``, its home in the runtime wing; this path stays for users."""

import sys

from .runtime import facets as _home

sys.modules[__name__] = _home
