"""Telegram: the Bot API client, updates (webhook or long polling), chats and forum topics in
Telegram HTML with inline keyboards."""
