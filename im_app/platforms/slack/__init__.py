"""Slack: the Web API client, Events API / interactivity / slash commands (webhooks or Socket
Mode), threads in mrkdwn with Block Kit buttons."""
