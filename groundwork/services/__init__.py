"""The application layer: every rule once, below the transports.

A service takes a principal and a request value, calls ports, and returns a
core value or raises a core error (`groundwork.errors.Refused` and kin, which
carry `code`, `message` and `alternative`). HTTP (`retrieval_api`), MCP
(`agent_tools`) and the CLI map their requests to these calls and render the
results; they never import each other. Nothing here imports a framework or an
adapter: the ports arrive as a `PlatformPorts` value.
"""
