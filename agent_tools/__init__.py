"""The tool registry bound to the platform: handlers, dispatch, MCP server."""
