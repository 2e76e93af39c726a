"""Where the browser tests find Chromium and how they start it: Debian's chromium (dev.py installs
it); Playwright never downloads a browser. A module of its own, not conftest: several test folders
have a conftest.py, so ``from conftest import ...`` would find whichever was imported first."""

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]
