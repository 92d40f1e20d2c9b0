"""The platform's tools for agents: one registry, served over MCP and HTTP."""
