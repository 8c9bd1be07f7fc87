"""Operations: logs, stats, metrics and exit status for crawls run as a service."""
