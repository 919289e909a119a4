"""toolerr."""
