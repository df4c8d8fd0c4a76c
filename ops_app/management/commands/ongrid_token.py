"""Issue an API token for a user and print it (the only time it is ever shown)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils.translation import gettext_lazy as _

from ops_app.core.commands import LocalizedCommand
from ops_app.models import ApiToken


class Command(LocalizedCommand):
    help = _("Issue an API token for USERNAME and print it once (Ongrid stores only its hash).")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help=_("What the token is for (shown in the admin)."))
        parser.add_argument(
            "--revoke-all", action="store_true", help=_("Delete the user's existing tokens first.")
        )

    def handle(self, *args, username: str, name: str, revoke_all: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        if not user.is_active:
            raise CommandError(f"user {username!r} is inactive")
        if revoke_all:
            revoked, _ = ApiToken.objects.filter(user=user).delete()
            self.stderr.write(f"Revoked {revoked} token(s) of {username}.")
        _, token = ApiToken.issue(user, name=name)
        self.stderr.write(f"API token for {username}, shown once; send it as 'Authorization: Token <token>':")
        self.stdout.write(token)
