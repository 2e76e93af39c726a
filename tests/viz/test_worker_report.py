"""A worker's report names its entry file, drive and bindings, in its title and first rows; every report links the glossary of marks on the page."""

import html
import re
from pathlib import Path

from alarmkit.viz.report import export_html
from alarmkit.workers import run_worker

NB = Path(__file__).resolve().parents[2] / "notebooks" / "workers"


def test_a_worker_report_names_its_entry_drive_and_bindings(tmp_path):
    run = run_worker(NB / "outbox.py", NB / "drive.json", bindings={"OUTBOX": "Outbox", "INBOX": "Inbox"})
    page = export_html(run, tmp_path / "w.html").read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?)</title>", page).group(1)
    assert html.unescape(title) == "worker outbox.py · drive drive.json · run not journaled"
    rows = dict(re.findall(r"<tr><th>([^<]+)</th><td[^>]*>([^<]*)</td></tr>", page))
    assert rows["entry file"] == str(NB / "outbox.py") and rows["drive"] == str(NB / "drive.json")
    assert rows["bindings"] == "OUTBOX = Outbox, INBOX = Inbox"
    assert '<a href="#marks">' in page and '<details id="marks"' in page and 'href="index.html"' not in page
