"""`python -m archkit.cli` runs the command line."""

from archkit.cli import main

main()
