"""The grammar engine: how an option takes its value decides what the next word is, unknown and
abbreviated options are refused, and denied options are refused in every spelling."""

from __future__ import annotations

import pytest

from agents_app.toolsets.hosts.shell_policy import Grammar, PolicyRefusal
from tests.support.shell_policy import ids, policy_table

# --- the engine on a grammar of its own: every way an option can take a value ----------------

ENGINE = Grammar(
    "ab:c::",
    "flag value= maybe?",
    denied={"-x": "x is denied", "--danger": "danger is denied"},
    files=("-b", "--value"),
    numeric=True,
    lookahead={"-c": r"\d+"},
)

PARSED = [
    # (words, options, operands, words that name files)
    (["-a"], [("-a", None)], [], []),
    (["-ab", "v"], [("-a", None), ("-b", "v")], [], ["v"]),
    (["-abv"], [("-a", None), ("-b", "v")], [], ["v"]),
    (["-b", "-a"], [("-b", "-a")], [], ["-a"]),
    (["-c"], [("-c", None)], [], []),
    (["-c", "5"], [("-c", "5")], [], []),
    (["-c", "x"], [("-c", None)], ["x"], ["x"]),
    (["-c7"], [("-c", "7")], [], []),
    (["-12"], [("-NUM", "12")], [], []),
    (["--flag"], [("--flag", None)], [], []),
    (["--value=v"], [("--value", "v")], [], ["v"]),
    (["--value", "v"], [("--value", "v")], [], ["v"]),
    (["--value="], [("--value", "")], [], [""]),
    (["--maybe"], [("--maybe", None)], [], []),
    (["--maybe=v"], [("--maybe", "v")], [], []),
    (["--maybe", "v"], [("--maybe", None)], ["v"], ["v"]),
    (["f", "-a"], [("-a", None)], ["f"], ["f"]),
    (["--", "-a", "--flag"], [], ["-a", "--flag"], ["-a", "--flag"]),
    (["-"], [], ["-"], ["-"]),
    (["--help"], [("--help", None)], [], []),
    (["--version"], [("--version", None)], [], []),
]

ENGINE_REFUSED = [
    (["-z"], "`prog -z`: unknown option"),
    (["-az"], "`prog -z`: unknown option"),
    (["-x"], "`prog -x`: x is denied"),
    (["-ax"], "`prog -x`: x is denied"),
    (["--danger"], "`prog --danger`: danger is denied"),
    (["--danger=1"], "`prog --danger`: danger is denied"),
    (["--dang"], "`prog --dang`: danger is denied"),
    (["--fla"], "`prog --fla`: abbreviated options are not accepted; write `--flag` in full"),
    (["--flag=1"], "`prog --flag`: this option takes no value"),
    (["--value"], "`prog --value`: this option needs a value"),
    (["-b"], "`prog -b`: this option needs a value"),
    (["-ab"], "`prog -b`: this option needs a value"),
    (["--nope"], "`prog --nope`: unknown option"),
    (["--nope=1"], "`prog --nope`: unknown option"),
]


@pytest.mark.parametrize("words,options,operands,files", PARSED, ids=[" ".join(row[0]) for row in PARSED])
def test_the_engine_reads_each_spelling(words, options, operands, files):
    parsed = ENGINE.parse("prog", words)
    assert (parsed.options, parsed.operands, parsed.files) == (options, operands, files)


@pytest.mark.parametrize("words,fragment", ENGINE_REFUSED, ids=ids(ENGINE_REFUSED))
def test_the_engine_refuses(words, fragment):
    with pytest.raises(PolicyRefusal) as refusal:
        ENGINE.parse("prog", words)
    assert fragment in str(refusal.value)


# --- the same rules on real command lines ---------------------------------------------------------

ALLOWED = [
    # a value as the next word, attached, or after `=`
    ("head -n 5 x", [["head", "-n", "5", "x"]]),
    ("head -n5 x", [["head", "-n5", "x"]]),
    ("head --lines=5 x", [["head", "--lines=5", "x"]]),
    ("head --lines 5 x", [["head", "--lines", "5", "x"]]),
    ("head -5 x", [["head", "-5", "x"]]),
    ("sort -t, -k2n data.csv", [["sort", "-t,", "-k2n", "data.csv"]]),
    ("sort -to file", [["sort", "-to", "file"]]),
    ("tail -nf 5 x", [["tail", "-nf", "5", "x"]]),
    ("grep -e -v x", [["grep", "-e", "-v", "x"]]),
    ("systemctl -P ActiveState show nginx", None),
    ("systemctl --property=restart show nginx", None),
    # clustered flags
    ("ls -lah /var/log", [["ls", "-lah", "/var/log"]]),
    ("ss -tlnp", [["ss", "-tlnp"]]),
    # `--` ends the options
    ("ls -- -la", [["ls", "--", "-la"]]),
    ("grep -- -v x", [["grep", "--", "-v", "x"]]),
    ("cat -", [["cat", "-"]]),
    # optional values: only attached, or the next word when it looks like the value
    ("ls --color /etc", [["ls", "--color", "/etc"]]),
    ("ls --color=never /etc", None),
    ("date -I", [["date", "-I"]]),
    ("date -Iseconds", [["date", "-Iseconds"]]),
    ("journalctl -n", [["journalctl", "-n"]]),
    ("journalctl -n 20", [["journalctl", "-n", "20"]]),
    ("journalctl -n all", [["journalctl", "-n", "all"]]),
    ("journalctl -b -1", [["journalctl", "-b", "-1"]]),
    # every grammar knows --help and --version
    ("ls --help", None),
    ("df --version", None),
]

REFUSED = [
    ("ls --colr", "`ls --colr`: unknown option: only options the policy knows to be read-only"),
    ("ls --recur /", "`ls --recur`: abbreviated options are not accepted; write `--recursive` in full"),
    ("cat --show-al x", "abbreviated"),
    ("ls --all=yes", "`ls --all`: this option takes no value"),
    ("ls -lz", "`ls -z`: unknown option"),
    ("grep -Q x y", "`grep -Q`: unknown option"),
    ("head -n", "`head -n`: this option needs a value"),
    ("head --lines", "`head --lines`: this option needs a value"),
    # a denied option is refused clustered, with a value, or abbreviated
    ("tail -qf x", "`tail -f`: following output never ends"),
    ("tail -n5 -f x", "`tail -f`"),
    ("dmesg -Tc", "`dmesg -c`: this option clears"),
    ("systemctl -Hx status", "`systemctl -H`: reaching other hosts"),
    ("tail --follow=name x", "`tail --follow`"),
    ("tail --foll x", "`tail --foll`: following output never ends"),
    ("tail --f x", "`tail --f`: following output never ends"),
    ("sort --output x y", "`sort --output`: this option writes a file"),
    ("sort --out=x y", "`sort --out`: this option writes a file"),
    ("systemctl --kill-whom=all status", "`systemctl --kill-whom`"),
    ("systemctl --hos=user@host status", "`systemctl --hos`: reaching other hosts"),
    # an optional value never swallows a denied option
    ("journalctl -n -f", "`journalctl -f`: following output never ends"),
    ("journalctl -b -f", "`journalctl -f`"),
    # a value-taking option's value is not the verb
    ("systemctl -P status restart nginx", "`systemctl restart`: only read verbs"),
    ("systemctl --property status restart", "`systemctl restart`"),
    ("systemctl -- restart nginx", "`systemctl restart`"),
]

test_allowed, test_refused = policy_table(ALLOWED, REFUSED)
