"""Channel-layer group names. Kept in one place so publishers and consumers always agree."""


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def session_group(session_id: int) -> str:
    return f"session.{session_id}"
