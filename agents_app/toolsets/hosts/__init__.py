"""Running inspection commands on the estate's hosts.

`transport` defines what a command run is (argv lists, pipelines, caps, timeouts); `local` runs
them on the Ongrid host without a shell, `ssh` on a device over asyncssh; `devices` turns a
tool's `device` argument into a transport, within the caller's organization only; `parsers`
turns real command output into the compact results the host tools return.
"""
