"""The command's exit codes (docs/reference/cli.md), apart so the entry point can use them before loading anything."""

EXIT_OK, EXIT_DATA, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM
