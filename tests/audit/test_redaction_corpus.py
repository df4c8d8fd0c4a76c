"""The audit redactor's corpus: every line is a credential shape seen in tool arguments and results.

Each secret line must lose its secret, in free text and inside JSON arguments; each harmless line
must come back unchanged (no over-redaction). Decisions recorded here:
- keys naming a setting *about* a secret keep their value (`password_policy_days: 90`,
  `token_count`, `secret_name`); the last word of the key decides (see METADATA_WORDS);
- `-p` is a password only for MySQL/MariaDB clients (`ssh -p 2222`, `mkdir -p` stay);
- `-u user:pass` keeps the user and masks the password, whatever the command.
"""

from __future__ import annotations

import json

import pytest

from audit_app.redaction import MASK, is_secret_key, redact_arguments, redact_text

FAKE_PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

# (text, the secrets that must not survive)
SECRET_LINES = [
    ('{"pwd": "Tr0ub4dor"}', ["Tr0ub4dor"]),
    ('{"pass": "hunter2pass"}', ["hunter2pass"]),
    ('{"db_pass": "hunter2pass"}', ["hunter2pass"]),
    ('{"passwd": "s3cr3t-pw"}', ["s3cr3t-pw"]),
    ('{"privateKey": "MIIEvQIBADANBg"}', ["MIIEvQIBADANBg"]),
    ('{"private_key": "MIIEvQIBADANBg"}', ["MIIEvQIBADANBg"]),
    ('{"sessionid": "q8z1x0abcdef"}', ["q8z1x0abcdef"]),
    ('{"sessionId": "q8z1x0abcdef"}', ["q8z1x0abcdef"]),
    ('{"creds": "admin:letmein99"}', ["letmein99"]),
    ('{"credentials": {"user": "a", "password": "letmein99"}}', ["letmein99"]),
    ('{"api_key": "k-123456789"}', ["k-123456789"]),
    ('{"apikey": "k-123456789"}', ["k-123456789"]),
    ('{"apiKey": "k-123456789"}', ["k-123456789"]),
    ('{"Authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"}', ["YWxhZGRpbjpvcGVuc2VzYW1l"]),
    ('{"cookie": "sessionid=abc123xyz; csrftoken=def456"}', ["abc123xyz", "def456"]),
    ("Cookie: sessionid=abc123xyz; csrftoken=def456", ["abc123xyz", "def456"]),
    ("mysql -h db -u root -pS3cretPw shop", ["S3cretPw"]),
    ("mysqldump -uroot -pS3cretPw shop > dump.sql", ["S3cretPw"]),
    ('{"cmd": "mysql -u root -pS3cretPw"}', ["S3cretPw"]),
    ("psql --password=S3cretPw -h db", ["S3cretPw"]),
    ("PGPASSWORD=S3cretPw psql -h db", ["S3cretPw"]),
    ("curl -u admin:S3cretPw https://api.example.com", ["S3cretPw"]),
    ("curl --user admin:S3cretPw https://api.example.com", ["S3cretPw"]),
    ("curl --user=admin:S3cretPw https://api.example.com", ["S3cretPw"]),
    ("git clone https://deploy:S3cretPw@git.example.com/repo.git", ["S3cretPw"]),
    ("postgres://ongrid:S3cretPw@db.internal:5432/ongrid", ["S3cretPw"]),
    ("stripe key sk_live_51HabcdefGHIJKLmnop", ["sk_live_51HabcdefGHIJKLmnop"]),
    ("stripe key rk_test_51HabcdefGHIJKLmnop", ["rk_test_51HabcdefGHIJKLmnop"]),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrst", ["sk-proj-abcdefghijklmnopqrst"]),
    ("model key sk-abcdefghijklmnopqrstuv", ["sk-abcdefghijklmnopqrstuv"]),
    ("maps key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv", ["AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv"]),
    ("token ghp_" + "a1B2" * 9, ["ghp_" + "a1B2" * 9]),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", ["github_pat_11ABCDEFG0123456789_abcdefghijklmnop"]),
    ("slack xoxb-1234567890-0987654321-AbCdEfGh", ["xoxb-1234567890-0987654321-AbCdEfGh"]),
    ("slack xoxp-1234567890-0987654321-AbCdEfGh", ["xoxp-1234567890-0987654321-AbCdEfGh"]),
    ("slack xapp-1-A012345-67890-abcdef", ["xapp-1-A012345-67890-abcdef"]),
    ("aws AKIAIOSFODNN7EXAMPLE", ["AKIAIOSFODNN7EXAMPLE"]),
    (
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
    ),
    (
        '{"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
        ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
    ),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ["wJalrXUtnFEMI"]),
    ("curl -H 'Authorization: Bearer abcdef0123456789'", ["abcdef0123456789"]),
    (
        "Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
        ["9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"],
    ),
    (FAKE_PEM, ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"]),
    ("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7truncated", ["MIIEowIBAAKCAQEA7truncated"]),
    (f"jwt {JWT}", [JWT.split(".")[2]]),
    ("receiver oga_Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OQ", ["oga_Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OQ"]),
    ("api ogt_Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OQ", ["ogt_Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OQ"]),
    ("spring.datasource.password=S3cretPw", ["S3cretPw"]),
    ("Server=db;UID=sa;PWD=S3cretPw;", ["S3cretPw"]),
]

HARMLESS_LINES = [
    "password_policy_days: 90",
    '{"password_policy_days": 90, "password_min_length": 12}',
    '{"token_count": 5, "max_tokens": 200, "prompt_tokens": 10}',
    '{"secret_name": "db-creds", "token_type": "bearer"}',
    "mkdir -p /var/log/app && cp -p a b",
    "ssh -p 2222 web-01 uptime",
    "sort -u /etc/hosts",
    "ps -u root",
    "tests passed: 12, bypass_cache=true",
    '{"passed": 12, "compass": "north", "keyboard": "us"}',
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "the password was rotated yesterday",
    "https://example.com/releases/v1.2@latest",
    '{"device": "web-01", "path": "/var/log/syslog", "lines": 50}',
    "ONGRID_MODEL=gpt-4o-mini",
]


@pytest.mark.parametrize(("text", "secrets"), SECRET_LINES, ids=[line[:40] for line, _ in SECRET_LINES])
def test_secret_line_is_redacted(text, secrets):
    for redacted in (redact_text(text), redact_arguments(text), redact_arguments(json.dumps({"cmd": text}))):
        assert MASK in redacted
        for secret in secrets:
            assert secret not in redacted


@pytest.mark.parametrize("text", [line for line, _ in SECRET_LINES if line.startswith("{")])
def test_redacted_json_stays_json(text):
    json.loads(redact_arguments(text))


@pytest.mark.parametrize("text", HARMLESS_LINES)
def test_harmless_line_is_unchanged(text):
    assert redact_text(text) == text
    assert redact_arguments(text) == text


def test_mysql_and_curl_keep_the_rest_of_the_command():
    assert redact_text("mysql -h db -u root -pS3cretPw shop") == f"mysql -h db -u root -p{MASK} shop"
    assert redact_text("curl -u admin:S3cretPw https://x") == f"curl -u admin:{MASK} https://x"


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("privateKey", True),
        ("PRIVATE-KEY", True),
        ("mysqlPwd", True),
        ("creds", True),
        ("x-api-key", True),
        ("passed", False),
        ("bypass", False),
        ("password_policy_days", False),
        ("completion_tokens", False),
        ("monkey", False),
    ],
)
def test_secret_key_names(key, secret):
    assert is_secret_key(key) is secret
