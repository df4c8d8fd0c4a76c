"""Tools a surface hands to one run it opened, to take that run's structured result: an
investigation's report (incidents_app), a scheduled inspection's finding (schedules_app).

Declared here so their names and classes are known like every tool's; the surface that opens the
run binds each to its handler and schema with `Tool.from_spec`.
"""
