from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    verbose_name = "Agents"

    def ready(self) -> None:
        # Imported here, not at the top: these modules use models, which load after app configs.
        from agents_app.gate.review_gate import ReviewGate
        from agents_app.personas import user_agents, user_skills
        from agents_app.runtime.core import get_runtime
        from agents_app.tools.invoke import set_review_gate
        from agents_app.toolsets import registry as toolsets

        user_agents.connect_signals()
        user_skills.connect_signals()
        # Every process that can run an agent gets the real review gate, never the refuse-all
        # default (docs/review-gate.md).
        set_review_gate(ReviewGate(get_runtime()))
        # The manifests are read now, so a broken toolset package (ONGRID_TOOLSETS) stops the
        # process at start with the package named, not at the first chat.
        toolsets.loaded()
