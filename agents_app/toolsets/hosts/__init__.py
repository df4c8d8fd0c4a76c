"""The host toolset: read-only inspection of one device, and service restarts (docs/hosts.md).

The handlers (`inspection`, `probes`, `shell`, `services`) run fixed argv commands through
`running`, which resolves the device inside the caller's organization and picks its transport:
`transport` defines what a command run is (argv lists, pipelines, caps, timeouts); `local` runs
them on the Ongrid host without a shell, `ssh` on a device over asyncssh; `devices` turns a
tool's `device` argument into a transport; `parsers` turns real command output into the compact
results the tools return; `shell_policy/` decides what `host_bash` may run.
"""
