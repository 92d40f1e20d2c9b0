"""One module per `groundwork` subcommand. Each holds `register(subcommands)`,
which adds its parser with its flags and sets `func` to the function that runs
it; `groundwork_cli.main.COMMANDS` lists them in the order `--help` shows."""
