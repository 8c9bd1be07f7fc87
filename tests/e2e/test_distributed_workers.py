"""Three worker processes of one crawl on a real redis-server.

The site: 4 origins of 97 pages (388), budget 90 pages per seed. Every test
compares every seed's manifest with the single-process crawl's.
"""

from __future__ import annotations

import collections
import json
import random
import signal
import subprocess
import time

import pytest

from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env
from tests.support.distributed_site import (
    MAX_PAGES,
    ORIGINS,
    command,
    expected,  # noqa: F401  (fixture)
    finish,
    hits,
    manifests,
    site_servers,  # noqa: F401  (fixture)
    sites,  # noqa: F401  (fixture)
    start,
    wait_for_hits,
    wait_for_worker,
)
from tests.support.jobdir_helpers import page_hits, stop
from tests.support.redisserver import RedisServer, redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.redis


def each_page_once(servers) -> None:
    for server in servers:
        counts = collections.Counter(page_hits(server))
        assert max(counts.values()) == 1, counts.most_common(3)


def test_three_workers_make_the_single_process_manifests(sites, expected, redis_server, tmp_path):  # noqa: F811
    # No fault here: a lease long enough that none runs out on a loaded machine, so every
    # page is fetched once (with the tests' 2 s lease a starved worker may lose one).
    url, lease = redis_server.url, ("-s", "TRAVERSE_LEASE_TIMEOUT=60")
    first = start(command(tmp_path, sites, url, *lease))
    joiners = [start(command(tmp_path, sites, url, *lease, seeds=False)) for _ in range(2)]
    results = finish([first, *joiners])
    for status, err in results:
        assert status == 0, err[-3000:]
        assert "every manifest written" in err
    assert manifests(tmp_path) == expected
    each_page_once(sites)
    assert hits(sites) == ORIGINS * MAX_PAGES
    # The work was shared (a joiner that starts late on a loaded machine may find none left).
    worked = [err.count("distributed/committed") for _, err in results]
    assert sum(worked) >= 2, "the workers shared the crawl"

    status = scrapy("crawlstatus", "--json", "-s", f"REDIS_URL={redis_server.url}")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["finished"] and shown["crawl"] == "traverse"
    assert [(s["id"], s["recorded"], s["inFlight"]) for s in shown["seeds"]] == [
        (f"site{i}", MAX_PAGES, 0) for i in range(ORIGINS)
    ]
    assert all(s["manifestWritten"] for s in shown["seeds"])
    text = scrapy("crawlstatus", "traverse", "-s", f"REDIS_URL={redis_server.url}")
    assert text.stdout.startswith("crawl traverse: 4 seed(s), finished\n")
    assert f"  site0: {MAX_PAGES} recorded, 0 queued, 0 in flight" in text.stdout
    unknown = scrapy("crawlstatus", "nope", "-s", f"REDIS_URL={redis_server.url}")
    assert unknown.returncode == 1 and "error: no crawl 'nope' in Redis" in unknown.stderr

    # A worker that defines the crawl otherwise is refused; one that joins a finished crawl leaves.
    other = command(tmp_path, sites, redis_server.url, "-s", "TRAVERSE_MAX_PAGES=50")
    refused = subprocess.run(other, cwd=REPO, env=scrapy_env(), capture_output=True, text=True)
    assert refused.returncode == 2
    assert "TRAVERSE_MAX_PAGES: this worker has 50, but crawl 'traverse' in Redis has 90" in (
        refused.stderr
    )
    agent = command(tmp_path, sites, redis_server.url, "-s", "USER_AGENT=other-bot/1.0")
    refused = subprocess.run(agent, cwd=REPO, env=scrapy_env(), capture_output=True, text=True)
    assert refused.returncode == 2
    assert "USER_AGENT: this worker has 'other-bot/1.0', but crawl 'traverse'" in refused.stderr
    links = command(tmp_path, sites, redis_server.url, "-s", "TRAVERSE_MAX_LINKS_PER_PAGE=5")
    refused = subprocess.run(links, cwd=REPO, env=scrapy_env(), capture_output=True, text=True)
    assert refused.returncode == 2
    assert (
        "TRAVERSE_MAX_LINKS_PER_PAGE: this worker has 5, but crawl 'traverse' in Redis has 10000"
        in refused.stderr
    )
    late = finish([start(command(tmp_path, sites, redis_server.url, seeds=False))])
    assert late[0][0] == 0 and "every manifest written" in late[0][1]


def test_a_worker_without_seeds_waits_then_leaves(redis_server, tmp_path):  # noqa: F811
    result = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path), "-s", f"REDIS_URL={redis_server.url}",
        "-s", "TRAVERSE_CRAWL_ID=empty", "-s", "TRAVERSE_IDLE_TIMEOUT=1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "crawl 'empty' has no seed after 1 s (TRAVERSE_IDLE_TIMEOUT); exiting" in result.stderr


def three_joined_workers(tmp_path, sites, url: str, *extra: str) -> list[subprocess.Popen[str]]:  # noqa: F811
    """Two joining workers, each waiting in the crawl, then the one with the seeds: all
    three crawl from the first page, and none is still starting when the test acts (on
    a loaded machine a start takes seconds, and one worker alone crawls the sites in as
    little)."""
    joiners = [start(command(tmp_path, sites, url, *extra, seeds=False)) for _ in range(2)]
    for joiner in joiners:
        wait_for_worker(url, joiner)
    first = start(command(tmp_path, sites, url, *extra))
    wait_for_worker(url, first)
    return [first, *joiners]


def test_sigkilled_workers_lose_nothing(sites, expected, redis_server, tmp_path):  # noqa: F811
    rng = random.Random(13)
    url = redis_server.url
    procs = [start(command(tmp_path, sites, url))]
    procs += [start(command(tmp_path, sites, url, seeds=False)) for _ in range(2)]
    killed = 0
    for target in sorted(rng.sample(range(20, ORIGINS * MAX_PAGES - 60), 3)):
        wait_for_hits(sites, target, procs)
        time.sleep(rng.uniform(0, 0.05))
        victim = rng.choice([p for p in procs if p.poll() is None])
        stop(victim, signal.SIGKILL)
        killed += 1
        procs.remove(victim)
        procs.append(start(command(tmp_path, sites, url, seeds=False)))
    assert killed == 3
    for status, err in finish(procs):
        assert status == 0, err[-3000:]
    assert manifests(tmp_path) == expected


def test_a_worker_stopped_past_its_lease(sites, expected, redis_server, tmp_path):  # noqa: F811
    url = redis_server.url
    procs = [start(command(tmp_path, sites, url))]
    procs += [start(command(tmp_path, sites, url, seeds=False)) for _ in range(2)]
    wait_for_worker(url, procs[1])
    wait_for_hits(sites, 60, procs)
    procs[1].send_signal(signal.SIGSTOP)
    time.sleep(3.5)  # past TRAVERSE_LEASE_TIMEOUT=2
    procs[1].send_signal(signal.SIGCONT)
    results = finish(procs)
    for status, err in results:
        assert status == 0, err[-3000:]
    assert manifests(tmp_path) == expected
    stalled = results[1][1]
    assert "lease(s) lost" in stalled or "lease lost before its result" in stalled, stalled[-3000:]


def test_redis_paused_costs_time_not_pages(sites, expected, redis_server, tmp_path):  # noqa: F811
    url = redis_server.url
    procs = three_joined_workers(tmp_path, sites, url)  # none refused at start by the pause
    wait_for_hits(sites, 80, procs)
    redis_server.pause()
    time.sleep(3)
    redis_server.resume()
    for status, err in finish(procs):
        assert status == 0, err[-3000:]
    assert manifests(tmp_path) == expected


def test_redis_lost_stops_workers_and_keeps_the_state(sites, expected, redis_server, tmp_path):  # noqa: F811
    """Redis unanswering past TRAVERSE_REDIS_RETRY: every worker stops naming REDIS_URL;
    Redis back, new workers finish the crawl from the state it kept."""
    url = redis_server.url
    fast = ("-s", "TRAVERSE_REDIS_RETRY=1", "-s", 'REDIS_PARAMS={"socket_timeout": 0.5}')
    procs = three_joined_workers(tmp_path, sites, url, *fast)  # none refused at start (exit 2)
    wait_for_hits(sites, 100, procs)
    redis_server.pause()
    try:
        results = finish(procs, timeout=60)
    finally:
        redis_server.resume()
    for status, err in results:
        assert status == 1, err[-3000:]
        assert "REDIS_URL: lost Redis at" in err
    before = hits(sites)
    assert before < ORIGINS * MAX_PAGES
    shown = scrapy("crawlstatus", "--json", "-s", f"REDIS_URL={url}")
    assert shown.returncode == 0, shown.stderr
    kept = sum(seed["recorded"] for seed in json.loads(shown.stdout)["seeds"])
    assert kept > 0, "pages were recorded before Redis was lost"
    procs = [start(command(tmp_path, sites, url, seeds=False)) for _ in range(2)]
    for status, err in finish(procs):
        assert status == 0, err[-3000:]
    assert manifests(tmp_path) == expected
    # The kept state was used: no recorded page is fetched again. Pages fetched but not
    # recorded when Redis went are fetched again; a lease that lapses on a loaded
    # machine may cost a page or two more.
    assert hits(sites) - before <= ORIGINS * MAX_PAGES - kept + 3, (kept, before, hits(sites))


def test_graceful_stop_of_all_workers_then_restart(sites, expected, redis_server, tmp_path):  # noqa: F811
    url = redis_server.url
    procs = three_joined_workers(tmp_path, sites, url)  # a Ctrl-C mid-import is a traceback
    wait_for_hits(sites, 120, procs)
    for proc in procs:
        proc.send_signal(signal.SIGINT)
    for _status, err in finish(procs, timeout=60):
        assert "Traceback" not in err, err[-3000:]
    before = hits(sites)
    assert before < ORIGINS * MAX_PAGES
    procs = [start(command(tmp_path, sites, url))]
    procs += [start(command(tmp_path, sites, url, seeds=False)) for _ in range(2)]
    for status, err in finish(procs):
        assert status == 0, err[-3000:]
    assert manifests(tmp_path) == expected
    # Pages recorded before the stop are not fetched again: only those in flight (and, on a
    # loaded machine, a few whose 2 s lease ran out while their result was on its way).
    again = hits(sites) - ORIGINS * MAX_PAGES
    assert again < before // 3, f"{again} of the {before} pages fetched before the stop again"


def test_redis_killed_stops_workers_naming_redis_url(sites, redis_server, tmp_path):  # noqa: F811
    url = redis_server.url
    procs = [start(command(tmp_path, sites, url, "-s", "TRAVERSE_REDIS_RETRY=1"))]
    procs.append(start(command(tmp_path, sites, url, "-s", "TRAVERSE_REDIS_RETRY=1", seeds=False)))
    wait_for_worker(url, procs[1])  # both have joined: a worker still starting is refused (2)
    wait_for_hits(sites, 60, procs)
    redis_server.stop()
    for status, err in finish(procs, timeout=60):
        assert status == 1, err[-3000:]
        assert "REDIS_URL: lost Redis at" in err
        assert "Traceback" not in err, err[-3000:]


def test_redis_restarted_empty_stops_workers_naming_redis_url(sites, redis_server, tmp_path):  # noqa: F811
    """Redis back on its port with none of the crawl's keys (no persistence, a FLUSHALL,
    eviction): the crawl's state is lost, and every worker says so instead of leaving as
    if the crawl had no seed."""
    url = redis_server.url
    procs = [start(command(tmp_path, sites, url))]
    procs.append(start(command(tmp_path, sites, url, seeds=False)))
    wait_for_worker(url, procs[1])
    wait_for_hits(sites, 60, procs)
    redis_server.stop()
    redis_server.start()  # the same port, empty
    results = finish(procs, timeout=60)
    for status, err in results:
        assert status == 1, err[-3000:]
        assert f"REDIS_URL: the state of crawl 'traverse' vanished from Redis at {url}" in err
        assert "has no seed" not in err and "Traceback" not in err, err[-3000:]
    assert manifests(tmp_path) == {}
