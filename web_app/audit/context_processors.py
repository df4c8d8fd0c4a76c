from django.http import HttpRequest

from audit_app.queries import can_audit


def audit(request: HttpRequest) -> dict:
    """`can_audit` for the navigation; a callable, so pages that never ask pay nothing."""
    return {"can_audit": lambda: can_audit(getattr(request, "user", None))}
