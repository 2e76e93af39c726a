""".env / .env.local / .dev.vars read as wrangler 4 reads them: the expected values below are what wrangler
4.86.0's own parser (and, for .env, its $NAME expansion) made of each text (run once with node on the bundled
parser, 2026-12-05). Before alarmkit read them by its own rules and differed in silence: ``COLOR=#fff`` kept
``#fff`` (wrangler: empty), ``A="q" # c`` kept the quotes and the comment, ``B=${A}x`` stayed literal (wrangler
expands), a multi-line quoted value (a PEM key) was refused, a BOM refused the first line. Plus hostile files:
a directory, a FIFO, /dev/zero, binary, huge, a quote never closed."""

from __future__ import annotations

import os

import pytest

from alarmkit.errors import WorkerError
from alarmkit.workers.wrangler import read_dev_vars

WRANGLER = [  # (.env text, wrangler 4.86.0's parse, its parse + expand)
    ('A=1\nB=${A}x\nC="q" # c\nD=abc#def\nE=#fff\nF="multi\nline"\nG=$A$B\nH=${NOPE:-dflt}\nI=${A:+alt}\nJ=\\$A\nK=\'s $A\'\nL=`bt`\nM = spaced  \nexport N=exp\nO="a\\nb\\rc"\nP=${P}\nQ=${A}${Q:-z}\n', {'A': '1', 'B': '${A}x', 'C': 'q', 'D': 'abc', 'E': '', 'F': 'multi\nline', 'G': '$A$B', 'H': '${NOPE:-dflt}', 'I': '${A:+alt}', 'J': '\\$A', 'K': 's $A', 'L': 'bt', 'M': 'spaced', 'N': 'exp', 'O': 'a\nb\rc', 'P': '${P}', 'Q': '${A}${Q:-z}'}, {'A': '1', 'B': '1x', 'C': 'q', 'D': 'abc', 'E': '', 'F': 'multi\nline', 'G': '11x', 'H': 'dflt', 'I': 'alt', 'J': '$A', 'K': 's 1', 'L': 'bt', 'M': 'spaced', 'N': 'exp', 'O': 'a\nb\rc', 'P': '', 'Q': '1z'}),
    ('\ufeffA=bom\n', {'A': 'bom'}, {'A': 'bom'}),
    ('A=1\r\nB=2\r\n', {'A': '1', 'B': '2'}, {'A': '1', 'B': '2'}),
    ('A="x" trailing\n', {'A': '"x" trailing'}, {'A': '"x" trailing'}),
    ("A='it''s'\n", {'A': "it''s"}, {'A': "it''s"}),
    ('A="esc \\" quote"\n', {'A': 'esc \\" quote'}, {'A': 'esc \\" quote'}),
    ('A=${B}\nB=2\nC=${B-d}${X-e}${B+f}${X+g}${B:+h}\n', {'A': '${B}', 'B': '2', 'C': '${B-d}${X-e}${B+f}${X+g}${B:+h}'}, {'A': '', 'B': '2', 'C': '2efh'}),
    ('A=a\nA=b\nB=$A\n', {'A': 'b', 'B': '$A'}, {'A': 'b', 'B': 'b'}),
    ('KEY="-----BEGIN KEY-----\nabc\ndef\n-----END KEY-----"\nNEXT=1\n', {'KEY': '-----BEGIN KEY-----\nabc\ndef\n-----END KEY-----', 'NEXT': '1'}, {'KEY': '-----BEGIN KEY-----\nabc\ndef\n-----END KEY-----', 'NEXT': '1'}),
    ("A='single\nmulti' # c\nB=`back\ntick`\n", {'A': 'single\nmulti', 'B': 'back\ntick'}, {'A': 'single\nmulti', 'B': 'back\ntick'}),
    ('A=x y z   # comment\nB=   \nC=""\n', {'A': 'x y z', 'B': '', 'C': ''}, {'A': 'x y z', 'B': '', 'C': ''}),
    ('A=$\nB=$1\nC=${}\nD=${A}${}\n', {'A': '$', 'B': '$1', 'C': '${}', 'D': '${A}${}'}, {'A': '$', 'B': '$1', 'C': '${}', 'D': '$${}'}),
    ('A=${A:-${B}}\nB=2\n', {'A': '${A:-${B}}', 'B': '2'}, {'A': '', 'B': '2'}),
    ('X=1\nA=\\${X}\nB=\\$X$X\n', {'X': '1', 'A': '\\${X}', 'B': '\\$X$X'}, {'X': '1', 'A': '${X}', 'B': '\\11'}),
    ('A=p$$w\nB=${A}\n', {'A': 'p$$w', 'B': '${A}'}, {'A': 'p$', 'B': 'p$'}),
    ('A=é ü 😀\nB=${A}!\n', {'A': 'é ü 😀', 'B': '${A}!'}, {'A': 'é ü 😀', 'B': 'é ü 😀!'}),
    ('A="a" "b"\n', {'A': 'a" "b'}, {'A': 'a" "b'}),
    ("A=  'x'  \n", {'A': 'x'}, {'A': 'x'}),
    ('A=#\nB="#"\n', {'A': '', 'B': '#'}, {'A': '', 'B': '#'}),
    ('export   A=1\n#export B=2\n  # C=3\n', {'A': '1'}, {'A': '1'}),
    ('A=${NOPE}\nB=$NOPE-x\nC=${A:-}\n', {'A': '${NOPE}', 'B': '$NOPE-x', 'C': '${A:-}'}, {'A': '', 'B': '-x', 'C': ''}),
    ('A="open\nB=2\nC="x" y\nD="z"\n', {'A': '"open', 'B': '2', 'C': '"x" y', 'D': 'z'}, {'A': '"open', 'B': '2', 'C': '"x" y', 'D': 'z'}),
    ('A="x\\"\nB=1\n', {'A': 'x\\', 'B': '1'}, {'A': 'x\\', 'B': '1'}),
    ('A="x\\" # c\nB="y"\n', {'A': 'x\\', 'B': 'y'}, {'A': 'x\\', 'B': 'y'}),
    ("A='a\\'b' # c\n", {'A': "a\\'b"}, {'A': "a\\'b"}),
    ('A="\nB=1\n"\nC=2\n', {'A': '\nB=1\n', 'C': '2'}, {'A': '\nB=1\n', 'C': '2'}),
    ('A=`x` #c\nB=`\n`\n', {'A': 'x', 'B': '\n'}, {'A': 'x', 'B': '\n'}),
    ('A=1 #c\n#B=2\nC=3#\n', {'A': '1', 'C': '3'}, {'A': '1', 'C': '3'}),
    ('A=$A$A\nB=${B:-$B}\n', {'A': '$A$A', 'B': '${B:-$B}'}, {'A': '', 'B': ''}),
    ('A=x\nB=${A}${A}${A}\nC=${B}${B}\n', {'A': 'x', 'B': '${A}${A}${A}', 'C': '${B}${B}'}, {'A': 'x', 'B': 'xxx', 'C': 'xxxxxx'}),
]


@pytest.mark.parametrize("i", range(len(WRANGLER)))
def test_env_and_dev_vars_read_as_wrangler_reads_them(tmp_path, i):
    text, parsed, expanded = WRANGLER[i]
    (tmp_path / ".env").write_text(text)
    assert read_dev_vars(tmp_path) == expanded  # .env: parsed, then $NAME expanded
    (tmp_path / ".dev.vars").write_text(text)
    assert read_dev_vars(tmp_path) == parsed  # .dev.vars: parsed only, as wrangler does


def test_env_local_wins_and_expands_from_env(tmp_path):
    (tmp_path / ".env").write_text("HOST=a.example\nURL=https://${HOST}/x\nPORT=1\n")
    (tmp_path / ".env.local").write_text("PORT=2\nFULL=${URL}:$PORT\n")
    assert read_dev_vars(tmp_path) == {"HOST": "a.example", "URL": "https://a.example/x", "PORT": "2",
                                       "FULL": "https://a.example/x:2"}


def test_a_quote_never_closed_is_taken_as_written_for_its_line(tmp_path):
    (tmp_path / ".env").write_text("A='never closed\nB=1\nC=\"\n")
    assert read_dev_vars(tmp_path) == {"A": "'never closed", "B": "1", "C": '"'}


def test_the_machines_environment_is_never_read(tmp_path, monkeypatch):
    monkeypatch.setenv("ALARMKIT_DOTENV_SECRET", "leak")
    (tmp_path / ".env").write_text("A=${ALARMKIT_DOTENV_SECRET:-none}$ALARMKIT_DOTENV_SECRET\n")
    assert read_dev_vars(tmp_path) == {"A": "none"}


@pytest.mark.parametrize("make", ["dir", "fifo", "devzero", "dangling"])
def test_an_env_that_is_no_regular_file_is_not_read(tmp_path, make):
    p = tmp_path / ".env"
    if make == "dir":
        p.mkdir()
    elif make == "fifo":
        os.mkfifo(p)  # reading it would block for ever
    else:
        p.symlink_to("/dev/zero" if make == "devzero" else tmp_path / "gone")
    assert read_dev_vars(tmp_path) == {}


@pytest.mark.parametrize("text, message", [
    (b"A=\xff\xfe\n", r"cannot read .*/\.env: 'utf-8' codec can't decode byte 0xff"),
    (b"A=" + b"x" * (2 << 20) + b"\n", r"/\.env is 2,097,155 bytes, past the [\d,]+ a \.env file may be"),
    (b"not a pair\n", r"/\.env, line 1: expected NAME=value \(NAME an identifier\), got 'not a pair'$"),
])
def test_a_hostile_env_is_one_named_refusal(tmp_path, text, message):
    (tmp_path / ".env").write_bytes(text)
    with pytest.raises(WorkerError, match=message) as err:
        read_dev_vars(tmp_path)
    assert "\n" not in str(err.value)
