"""nanosandbox-mcp: an MCP server whose one tool runs programs in an OS sandbox.

The wheel installs the server binary itself onto PATH as ``nanosandbox-mcp``;
this package only lets ``python -m nanosandbox_mcp`` start it (see __main__).
"""

__version__ = "0.0.0"  # stamped by python/build_wheels.py
