"""The lexer: shell quoting makes data, only unquoted operators are operators, and nothing the
shell would expand or start as another command gets through."""

from __future__ import annotations

from tests.support.shell_policy import policy_table

ALLOWED = [
    # quoted and escaped operator characters are data
    ("grep -c ';' /var/log/syslog", [["grep", "-c", ";", "/var/log/syslog"]]),
    ('grep -c "a|b" x', [["grep", "-c", "a|b", "x"]]),
    ("grep -c a\\|b x", [["grep", "-c", "a|b", "x"]]),
    ("grep -c \\> x", [["grep", "-c", ">", "x"]]),
    ("grep -c '&&' x", [["grep", "-c", "&&", "x"]]),
    ('grep -c "(" x', [["grep", "-c", "(", "x"]]),
    ("ls '|' sh", [["ls", "|", "sh"]]),
    ("ls \\| sh", [["ls", "|", "sh"]]),
    ('ls "; rm -rf /"', [["ls", "; rm -rf /"]]),
    ("echo 'a > b; c'", [["echo", "a > b; c"]]),
    ("grep x \\; rm", [["grep", "x", ";", "rm"]]),
    # quotes join and end words as in a shell
    ("grep 'it''s' x", [["grep", "its", "x"]]),
    ('grep "it\'s" x', [["grep", "it's", "x"]]),
    ("grep a\\ b x", [["grep", "a b", "x"]]),
    ("grep '' x", [["grep", "", "x"]]),
    ('grep "a\\"b" x', [["grep", 'a"b', "x"]]),
    ('grep "a\\\\b" x', [["grep", "a\\b", "x"]]),
    ('grep "a\\nb" x', [["grep", "a\\nb", "x"]]),
    ("grep '\\' x", [["grep", "\\", "x"]]),
    ("'l''s' /tmp", [["ls", "/tmp"]]),
    ('"ls" -la', [["ls", "-la"]]),
    ("l\\s /tmp", [["ls", "/tmp"]]),
    # whitespace
    ("ls\t-la", [["ls", "-la"]]),
    ("   ls   ", [["ls"]]),
    # the kept operators, with or without spaces
    ("ls;", [["ls"]]),
    ("df -h;free -m", [["df", "-h"], ["free", "-m"]]),
    ("ps aux|grep nginx|wc -l", [["ps", "aux"], ["grep", "nginx"], ["wc", "-l"]]),
    ("ls /nope||ls /tmp", [["ls", "/nope"], ["ls", "/tmp"]]),
    ("ls /etc&&cat /etc/hosts", [["ls", "/etc"], ["cat", "/etc/hosts"]]),
    ("ls; ls; ls; ls; ls; ls; ls; ls", [["ls"]] * 8),
    # a lone `$` expands nothing; globs, `~`, braces and `#` are passed on literally
    ("grep 'timeout$' x", [["grep", "timeout$", "x"]]),
    ("echo $", [["echo", "$"]]),
    ("ls *.log", [["ls", "*.log"]]),
    ("echo ~", [["echo", "~"]]),
    ("ls {a,b}", [["ls", "{a,b}"]]),
    ("echo x # not a comment", [["echo", "x", "#", "not", "a", "comment"]]),
]

REFUSED = [
    # redirections, in every spelling
    ("ls > x", "`>`: redirections"),
    ("ls>x", "`>`: redirections"),
    ("ls >| x", "`>|`: redirections"),
    ("ls 1>&2", "`>&`: redirections"),
    ("ls <> x", "`<>`: redirections"),
    ("cat <<< x", "`<<<`: redirections"),
    ("cat < /etc/hosts", "`<`: redirections"),
    ("grep x <<EOF", "`<<`: redirections"),
    ("diff <(ls) x", "redirections"),
    # other operators
    ("ls &", "`&`: background jobs"),
    ("ls & ls", "`&`: background jobs"),
    ("ls &&& ls", "`&&&`: background jobs"),
    ("ls |& grep x", "`|&`: `|&` is not allowed"),
    ("(ls)", "`(`: subshells"),
    ("ls )", "`)`: subshells"),
    ("ls ;; ls", "`;;`: this shell operator is not allowed"),
    ("ls ||| ls", "`|||`: this shell operator is not allowed"),
    ("{ ls; }", "`{` is not on the list"),
    # empty commands around operators
    ("; ls", "`;`: `;` needs a command before it"),
    ("ls && && ls", "`&&` needs a command before it"),
    ("| ls", "a pipe needs a command on both sides"),
    ("ls | | ls", "a pipe needs a command on both sides"),
    ("ls |", "ends without a command"),
    ("ls && ", "`&&`: the command line ends without a command"),
    # substitutions, even quoted
    ("echo $(id)", "`$(`: command substitution"),
    ('echo "$(id)"', "command substitution"),
    ("echo '$(id)'", "command substitution"),
    ("echo $((1+1))", "command substitution"),
    ("echo `id`", "backticks"),
    ("echo '`id`'", "backticks"),
    ("echo \\`id\\`", "backticks"),
    # variables, even quoted
    ("ls $HOME", "`$HOME`: variable and parameter expansion"),
    ("ls ${HOME}", "`${HOME}`: variable"),
    ('ls "${HOME}"', "variable"),
    ("ls '$HOME'", "variable"),
    ("ls \\$HOME", "variable"),
    ("ls ${", "`${`: variable"),
    ("echo $1", "`$1`: variable"),
    ("echo $?", "`$?`: variable"),
    ("echo $$", "`$$`: variable"),
    ("echo $@", "`$@`: variable"),
    ("echo $_x", "`$_x`: variable"),
    # characters that would start another command or cut the line
    ("ls\nrm -rf /", "newlines would start another command"),
    ("ls 'x\ny'", "newlines"),
    ("ls\r", "carriage returns"),
    ("ls\0rm", "NUL bytes"),
    # unparsable lines
    ("ls 'unterminated", "no closing quotation"),
    ('ls "unterminated', "no closing quotation"),
    ('ls "x\\"', "no closing quotation"),
    ("ls x\\", "ends with a backslash"),
    # sizes
    ("", "the command line is empty"),
    ("   ", "empty"),
    ("\t", "empty"),
    ("ls " + "a" * 2000, "limited to 2000 characters"),
    ("ls; ls; ls; ls; ls; ls; ls; ls; ls", "at most 8 commands per line"),
    ("ls | ls | ls | ls | ls && ls | ls | ls | ls", "at most 8 commands"),
    # a quoted program name is still that program
    ("'r''m' -rf /", "`rm`: `rm` deletes files"),
    ('"rm" x', "`rm` deletes files"),
    ("\\rm x", "`rm` deletes files"),
    ("r\\m x", "`rm` deletes files"),
    ("grep x '|' | sh", "`sh`: `sh` starts a shell"),
    ("grep 'x' ; rm x", "`rm`"),
]

test_allowed, test_refused = policy_table(ALLOWED, REFUSED)
