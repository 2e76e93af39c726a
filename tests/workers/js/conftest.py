"""The JavaScript host's tests need Node.js 18+ and esbuild (installed by `python3 dev.py test`)."""

from pathlib import Path

import pytest

OBJECTS = Path(__file__).resolve().parent / "objects"


@pytest.fixture(scope="session")
def js_host() -> Path:
    """The folder of the JS/TS test objects, or a skip naming why the host cannot run here."""
    from alarmkit.workers.js import available

    reason = available()
    if reason is not None:
        pytest.skip(f"the JavaScript host cannot run here: {reason}")
    return OBJECTS
