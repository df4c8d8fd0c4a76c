"""The coordinator's control tools: dispatch a worker, message the user, stop a worker.

Declared here like every tool; their handlers are bound to one turn by the runtime
(`agents_app/runtime/control_tools.py`), for the coordinator only, so workers never nest.
"""
