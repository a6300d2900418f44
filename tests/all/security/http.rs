//! MCP over HTTP cannot be held down by slow clients; /metrics is guarded like /mcp.
