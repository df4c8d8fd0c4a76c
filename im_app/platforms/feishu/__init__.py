"""Feishu / Lark: the open platform client, event subscriptions (plain or encrypted), threads of
interactive cards in card markdown."""
