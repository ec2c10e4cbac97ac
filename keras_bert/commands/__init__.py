"""Sub-commands of the `keras-bert` CLI, one module each (see `cli.py`)."""
