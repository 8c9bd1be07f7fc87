"""Process-wide tuning: the start-up heap, the log level, refilling freed download places,
URL passwords masked in every log record."""
