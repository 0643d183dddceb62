"""`python -m archkit` runs the command line."""

from archkit.cli import main

main()
