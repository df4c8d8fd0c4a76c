from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents_app import user_agents

        user_agents.connect_signals()
        # Every process that can run an agent gets the real review gate (R16), never the default.
        from agents_app.tools.invoke import set_review_gate
        from agents_app.tools.review_gate import review_gate

        set_review_gate(review_gate)
