"""What the tests share: loopback servers and sites, the subprocess and component harnesses,
and fixture data (``FIXTURES``)."""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
