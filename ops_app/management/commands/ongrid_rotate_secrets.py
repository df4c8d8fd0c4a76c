"""Re-encrypt every encrypted column with the current key (the first of ONGRID_ENCRYPTION_KEYS).

Idempotent and batched: values already under the current key are left alone, legacy plain values
are encrypted. Exits non-zero when a value cannot be decrypted with any configured key.
"""

from __future__ import annotations

from cryptography.fernet import Fernet
from django.core.management.base import CommandError
from django.utils.translation import gettext_lazy as _

from ops_app.core import encryption
from ops_app.core.commands import LocalizedCommand


class Command(LocalizedCommand):
    help = _("Re-encrypt every stored secret with the current key (run after adding a key in front).")

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument(
            "--generate-key",
            action="store_true",
            help=_("Print a new key for ONGRID_ENCRYPTION_KEYS and exit."),
        )

    def handle(self, *args, batch_size: int, generate_key: bool, **options):
        if generate_key:
            self.stdout.write(Fernet.generate_key().decode())
            return
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        failed = []
        for model, field in encryption.encrypted_columns():
            count = encryption.rotate_column(model, field.column, batch_size=batch_size)
            self.stdout.write(
                f"{model._meta.label}.{field.name}: {count.values} stored, {count.rotated} re-encrypted, "
                f"{count.current} already current, {count.failed} undecryptable"
            )
            if count.failed:
                failed.append(f"{model._meta.label}.{field.name} ({count.failed})")
        if failed:
            raise CommandError(
                "some values cannot be decrypted with any key of ONGRID_ENCRYPTION_KEYS: " + ", ".join(failed)
            )
