"""Secrets at rest: the one encryption mechanism for every credential Ongrid stores.

- `EncryptedTextField` holds a secret (an SSH key or password, a bot token, an API key...). The
  model attribute is the plain text; the column holds `fernet:<token>` (Fernet: AES-128-CBC with
  an HMAC-SHA256, a random IV per value). An empty value stays empty: emptiness is not a secret.
- Keys come from `ONGRID_ENCRYPTION_KEYS` (parsed by `ongrid_site.config`): the first encrypts,
  all decrypt, so a key is rotated by putting the new one first and running
  `manage.py ongrid_rotate_secrets`, which re-encrypts every encrypted column of every model.
  Unset, one key is derived from SECRET_KEY, so a fresh instance works with no setup.
- Tokens that Ongrid issues (API tokens, Alertmanager receiver tokens) are not encrypted but
  hashed (`token_digest`): they are random, shown once, and looked up by their SHA-256.

Form fields of an encrypted column are write-only (`SecretFormField`): the value is never rendered
back, a blank submission keeps the stored value, and a "clear" box forgets it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django import forms
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connections, models, transaction
from django.utils.functional import lazy
from django.utils.text import capfirst, format_lazy
from django.utils.translation import gettext_lazy as _

PREFIX = "fernet:"


class SecretDecryptionError(Exception):
    """A stored secret cannot be decrypted with any configured key (the message names no value)."""


# --- keys and values ---------------------------------------------------------------------------


def configured_keys() -> tuple[str, ...]:
    keys = tuple(settings.ONGRID_ENCRYPTION_KEYS)
    if not keys:
        raise SecretDecryptionError("no encryption key is configured (ONGRID_ENCRYPTION_KEYS)")
    return keys


@functools.lru_cache(maxsize=8)
def _ciphers(keys: tuple[str, ...]) -> tuple[Fernet, MultiFernet]:
    fernets = [Fernet(key.encode()) for key in keys]
    return fernets[0], MultiFernet(fernets)


def is_encrypted(stored: str | None) -> bool:
    return bool(stored) and stored.startswith(PREFIX)


def encrypt(plain: str | None) -> str | None:
    """The column value for `plain` (encrypted with the first key; empty and None unchanged)."""
    if not plain:
        return plain
    _, multi = _ciphers(configured_keys())
    return PREFIX + multi.encrypt(plain.encode()).decode()


def decrypt(stored: str | None) -> str | None:
    """The plain text of a column value. A value without the prefix is a legacy plain value,
    returned as is (`ongrid_rotate_secrets` encrypts those)."""
    if not is_encrypted(stored):
        return stored
    _, multi = _ciphers(configured_keys())
    try:
        return multi.decrypt(stored[len(PREFIX) :].encode()).decode()
    except InvalidToken:
        raise SecretDecryptionError(
            "a stored secret cannot be decrypted with any key of ONGRID_ENCRYPTION_KEYS "
            "(was the key that encrypted it removed, or SECRET_KEY changed while no keys were set?)"
        ) from None


def is_current(stored: str) -> bool:
    """Encrypted with the current (first) key."""
    if not is_encrypted(stored):
        return False
    primary, _ = _ciphers(configured_keys())
    try:
        primary.decrypt(stored[len(PREFIX) :].encode())
    except InvalidToken:
        return False
    return True


def reencrypt(stored: str) -> str | None:
    """The value re-encrypted with the current key, or None when it already is (or is empty)."""
    if not stored or is_current(stored):
        return None
    return encrypt(decrypt(stored))


# --- issued tokens: random, shown once, stored as a hash -----------------------------------------


def new_token(prefix: str) -> str:
    """A fresh high-entropy token (256 bits); the prefix makes it recognisable to secret scanners."""
    return prefix + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def hmac_hex(secret: str, message: bytes) -> str:
    """HMAC-SHA256 of `message` under `secret`, in hex: what Ongrid's signed webhooks carry
    (`X-Ongrid-Signature: sha256=<this>`) and what alert sources' signatures are checked against."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


# --- the model field ----------------------------------------------------------------------------


class _Keep:
    """What a blank secret form field cleans to: keep the stored value."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP = _Keep()


class EncryptedTextField(models.TextField):
    """Text encrypted at rest. Filter only on emptiness: every encryption of a value differs."""

    description = "Text encrypted at rest (Fernet)"

    def from_db_value(self, value, expression, connection):
        return decrypt(value)

    def get_prep_value(self, value):
        return encrypt(super().get_prep_value(value))

    # Serialisation (dumpdata, fixtures) carries the ciphertext, never the plain text; loading it
    # back (with the same keys) decrypts it into the attribute.
    def value_to_string(self, obj):
        return encrypt(self.value_from_object(obj))

    def to_python(self, value):
        try:
            return decrypt(super().to_python(value))
        except SecretDecryptionError as exc:
            raise ValidationError(str(exc), code="undecryptable") from None

    def formfield(self, *, multiline: bool = False, **kwargs):
        # Deliberately ignores widget overrides (the admin maps TextField to a textarea that would
        # render the value back): every form of an encrypted column is write-only. `multiline`:
        # a box for values of several lines (custom headers, one `Name: value` per line).
        return SecretFormField(
            label=capfirst(self.verbose_name), help_text=self.help_text, multiline=multiline
        )

    def save_form_data(self, instance, data):
        if data is KEEP:
            return
        super().save_form_data(instance, data)


# --- write-only form field ----------------------------------------------------------------------


class SecretInput(forms.MultiWidget):
    """A password box (or, `multiline`, a text area) that never renders a value, and a labelled
    "clear" checkbox (`<name>_clear`)."""

    template_name = "ops_app/widgets/secret_input.html"

    def __init__(self, attrs=None, *, multiline: bool = False):
        if multiline:
            entry = forms.Textarea(
                attrs={"rows": 4, "cols": 60, "autocomplete": "off", "spellcheck": "false"}
            )
        else:
            entry = forms.PasswordInput(attrs={"autocomplete": "new-password"}, render_value=False)
        widgets = {"": entry, "clear": forms.CheckboxInput()}
        self.clear_label = _("Clear the stored value")
        super().__init__(widgets, attrs)

    def decompress(self, value):
        return ["", False]  # never the stored value

    def id_for_label(self, id_):
        return f"{id_}_0" if id_ else id_  # the field's label names the entry box

    def get_context(self, name, value, attrs):
        # Not even a value just typed: a form shown again with errors starts the box empty.
        context = super().get_context(name, ["", False], attrs)
        context["widget"]["clear_label"] = self.clear_label
        return context


_lower = lazy(lambda text: str(text).lower(), str)


class SecretFormField(forms.Field):
    """Cleans to the new value, to "" when "clear" is ticked, or to KEEP when left blank."""

    widget = SecretInput
    default_help = _("Write-only: leave blank to keep the stored value, tick the box to clear it.")

    def __init__(self, *, help_text: str = "", multiline: bool = False, **kwargs):
        kwargs["required"] = False
        kwargs.setdefault("widget", SecretInput(multiline=multiline))
        # format_lazy: both parts may be lazy translations, joined in the language of the request.
        help_text = format_lazy("{} {}", help_text, self.default_help) if help_text else self.default_help
        super().__init__(help_text=help_text, **kwargs)
        if self.label:
            # The box's own label names the field: "Clear the stored bot token".
            self.widget.clear_label = format_lazy(_("Clear the stored {field}"), field=_lower(self.label))

    def clean(self, value):
        text, clear = value if isinstance(value, list | tuple) else (value, False)
        if clear:
            return ""
        if text:
            return text
        return KEEP

    def has_changed(self, initial, data) -> bool:
        text, clear = data if isinstance(data, list | tuple) else (data, False)
        return bool(text) or bool(clear)


# --- finding and rotating every encrypted column ------------------------------------------------


def encrypted_columns() -> list[tuple[type[models.Model], models.Field]]:
    """Every (model, field) pair stored encrypted, across all installed apps."""
    found = []
    for model in apps.get_models():
        if model._meta.proxy or not model._meta.managed:
            continue
        for field in model._meta.concrete_fields:
            if isinstance(field, EncryptedTextField):
                found.append((model, field))
    return found


@dataclass
class RotationCount:
    values: int = 0  # non-empty values seen
    rotated: int = 0  # re-encrypted (old key, or legacy plain text)
    current: int = 0  # already under the current key
    failed: int = 0  # cannot be decrypted with any key


def rotate_column(
    model: type[models.Model], column: str, *, batch_size: int = 500, using: str = "default"
) -> RotationCount:
    """Re-encrypt one column with the current key, in batches, straight in SQL (no save signals:
    rotation is not a change anyone made). Idempotent; a row changed meanwhile is left alone."""
    connection = connections[using]
    quote = connection.ops.quote_name
    table, col, pk = quote(model._meta.db_table), quote(column), quote(model._meta.pk.column)
    count = RotationCount()
    last = None
    while True:
        with transaction.atomic(using=using), connection.cursor() as cursor:
            after = "" if last is None else f" AND {pk} > %s"
            cursor.execute(
                f"SELECT {pk}, {col} FROM {table} WHERE {col} IS NOT NULL AND {col} <> ''{after}"
                f" ORDER BY {pk} LIMIT %s",
                ([] if last is None else [last]) + [batch_size],
            )
            rows = cursor.fetchall()
            for key, stored in rows:
                count.values += 1
                try:
                    fresh = reencrypt(stored)
                except SecretDecryptionError:
                    count.failed += 1
                    continue
                if fresh is None:
                    count.current += 1
                    continue
                cursor.execute(
                    f"UPDATE {table} SET {col} = %s WHERE {pk} = %s AND {col} = %s", [fresh, key, stored]
                )
                count.rotated += cursor.rowcount
        if len(rows) < batch_size:
            return count
        last = rows[-1][0]


def decrypt_column(model: type[models.Model], column: str, *, using: str = "default") -> int:
    """Write a column back as plain text (only for reversing the migration that encrypted it)."""
    connection = connections[using]
    quote = connection.ops.quote_name
    table, col, pk = quote(model._meta.db_table), quote(column), quote(model._meta.pk.column)
    changed = 0
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {pk}, {col} FROM {table} WHERE {col} LIKE %s", [PREFIX + "%"])
        for key, stored in cursor.fetchall():
            cursor.execute(f"UPDATE {table} SET {col} = %s WHERE {pk} = %s", [decrypt(stored), key])
            changed += 1
    return changed
