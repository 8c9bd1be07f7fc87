"""Run one ``scrapy`` command under cProfile, timed by the process's CPU clock.

    SCRAPY_SETTINGS_MODULE=traverse_crawl.settings \\
        .venv/bin/python bench/cpuprofile.py OUT.prof \\
        crawl traverse -a url=... -s TRAVERSE_MODE=replay -s TRAVERSE_STORE=...
    .venv/bin/python -m pstats OUT.prof        # then: sort tottime, stats 40

Why the CPU clock: the comment above ``main``.
"""

from __future__ import annotations

import cProfile
import sys
import time

from scrapy.cmdline import execute


# cProfile's default clock is the wall clock, which on a shared machine charges
# every function for the time the process waited for a CPU (a ``listdir`` showed
# 3 ms a call); ``time.process_time`` counts only this process's own work.
# cProfile's overhead still inflates code made of many small calls (the pure-Python
# JSON encoder most): compare shares between profiles, not absolute times.
def main() -> None:
    out = sys.argv[1]
    sys.argv = ["scrapy", *sys.argv[2:]]
    profile = cProfile.Profile(time.process_time)
    try:
        profile.runcall(execute)
    except SystemExit:
        pass
    finally:
        profile.dump_stats(out)


if __name__ == "__main__":
    main()
