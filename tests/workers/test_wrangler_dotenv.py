"""Local vars beside a wrangler file, read as wrangler reads them: ``.dev.vars`` when there is one (and then
nothing else), else ``.env`` with ``.env.local`` over it (a real project kept its secrets in ``.env``)."""

import pytest

from alarmkit.errors import WorkerError
from alarmkit.workers.wrangler import read_dev_vars


def test_env_then_env_local_when_there_is_no_dev_vars(tmp_path):
    assert read_dev_vars(tmp_path) == {}
    (tmp_path / ".env").write_text("API_KEY=from-env\nREGION='eu west'\n")
    assert read_dev_vars(tmp_path) == {"API_KEY": "from-env", "REGION": "eu west"}
    (tmp_path / ".env.local").write_text('API_KEY="local\\nkey"\n')
    assert read_dev_vars(tmp_path) == {"API_KEY": "local\nkey", "REGION": "eu west"}


def test_dev_vars_wins_whole_and_env_files_are_then_not_read(tmp_path):
    (tmp_path / ".env").write_text("REGION=eu\nbroken line\n")  # never read: .dev.vars is there
    (tmp_path / ".dev.vars").write_text("API_KEY=dev\n")
    assert read_dev_vars(tmp_path) == {"API_KEY": "dev"}


def test_a_bad_env_line_is_named(tmp_path):
    (tmp_path / ".env").write_text("OK=1\nnot a pair\n")
    with pytest.raises(WorkerError, match=r"^.*/\.env, line 2: expected NAME=value \(NAME an identifier\), got 'not a pair'$"):
        read_dev_vars(tmp_path)
