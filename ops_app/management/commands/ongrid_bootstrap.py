"""Idempotent first-run setup: a demo organization and an admin whose credentials are printed.

The password comes from ONGRID_ADMIN_PASSWORD, or is generated once and kept (mode 0600) in the
data folder so that running the setup again prints the same working credentials. The demo
organization gets an Alertmanager receiver; its token is printed once, when it is created (only
its hash is stored, so later runs cannot print it again).
"""

from __future__ import annotations

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from ops_app.core.commands import LocalizedCommand
from ops_app.estate.demo import load_demo_estate
from ops_app.integrations import datasources
from ops_app.knowledge import vault as knowledge
from ops_app.models import AlertmanagerReceiver
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_organization, set_membership


class Command(LocalizedCommand):
    help = _("Create the demo organization and the admin user (idempotent) and print how to log in.")

    def add_arguments(self, parser):
        parser.add_argument("--organization", default=os.environ.get("ONGRID_ORG_NAME", "Demo Shop"))
        parser.add_argument("--username", default=os.environ.get("ONGRID_ADMIN_USER", "admin"))
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args, organization: str, username: str, url: str, **options):
        password, fresh = self._password()
        with transaction.atomic():
            org = create_organization(organization)
            User = get_user_model()
            user, created = User.objects.get_or_create(
                username=username, defaults={"is_staff": True, "is_superuser": True}
            )
            if created or fresh:
                user.set_password(password)
                user.is_staff = user.is_superuser = True
                user.save()
            if not hasattr(user, "membership"):
                set_membership(user, org, roles.ORG_ADMIN)
            demo_loaded = load_demo_estate(org)
            sources = datasources.create_from_environment(org)
            receiver = None
            if not AlertmanagerReceiver.objects.for_organization(org).exists():
                receiver = AlertmanagerReceiver.objects.create(organization=org, name="alertmanager")
        vault = knowledge.sync_vault(org, settings.CONFIG.vault_dir)  # unchanged files are skipped
        self.stdout.write(f"Organization: {org.name}")
        if demo_loaded:
            self.stdout.write("Loaded the demo estate (devices, topology, rules, one firing incident).")
        self.stdout.write(
            f"Knowledge vault {settings.CONFIG.vault_dir}: {len(vault.indexed)} indexed, "
            f"{len(vault.unchanged)} unchanged, {len(vault.removed)} removed"
        )
        for source in sources:
            self.stdout.write(f"Data source {source.name}: {source.url} (from the environment)")
        if receiver is not None:
            self.stdout.write(
                f"Alertmanager webhook: POST {url.rstrip('/')}/api/alertmanager/ with the header "
                f'"Authorization: Bearer {receiver.token}" (shown once; see docs/estate.md)'
            )
        self.stdout.write(f"Log in at {url} as {username} / {password}")

    def _password(self) -> tuple[str, bool]:
        """The admin password, and whether it must be (re)applied to the user row."""
        given = os.environ.get("ONGRID_ADMIN_PASSWORD")
        if given:
            return given, True
        path = settings.CONFIG.data_dir / "admin-password"
        if path.exists():
            return path.read_text().strip(), False
        password = secrets.token_urlsafe(12)
        path.touch(mode=0o600)
        path.write_text(password + "\n")
        return password, True
