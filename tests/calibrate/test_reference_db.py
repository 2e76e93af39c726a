"""`calibrate --reference --db FILE` ignored --db without a word: now refused, one
line, exit 2, before anything runs, and the file is left as it was."""

from alarmkit.cli import main


def test_reference_with_db_is_refused_naming_both(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert main(["calibrate", "--reference", "--db", "notes.txt"]) == 2
    err = capsys.readouterr().err
    assert err == ("alarmkit: error: --db 'notes.txt' does nothing with --reference: the reference run is read from "
                   "its file and nothing is journaled; drop --db, or drop --reference to calibrate against workerd and "
                   "journal both runs\n")
    assert notes.read_text() == "my notes\n" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
