from django.apps import AppConfig


class EvalsAppConfig(AppConfig):
    """The evaluation suite's runner (`manage.py ongrid_eval`): a surface beside web_app.

    It drives the agents the way a user does (a chat turn) against scenarios loaded into
    throwaway organizations, and grades what they did from the session tree and the audit rows.
    """

    name = "evals_app"
    verbose_name = "Evaluations"
