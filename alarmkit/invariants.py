"""``alarmkit.invariants`` is ``alarmkit.journal.invariants``, its home in the journal wing; this path stays for users."""

import sys

from .journal import invariants as _home

sys.modules[__name__] = _home
