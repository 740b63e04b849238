"""The bottom layer: domain errors, the lifecycle mechanism, money and time helpers and
the shared admin bases. Imports nothing from the project's other apps."""
