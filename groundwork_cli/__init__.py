"""The `groundwork` command line: start everything, run the demo, manage keys."""
