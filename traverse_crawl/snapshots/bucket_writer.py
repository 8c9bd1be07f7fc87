"""The snapshot writer process's loop for a store in a bucket (``storage/bucket.py``).

Each object is a PUT, a round trip to the endpoint: the files are put as they come,
up to ``IN_FLIGHT`` at once on botocore's thread-safe client, rather than batch by
batch (a batch would wait for its slowest PUT before the next one starts). Answers
keep the protocol of ``snapshots/writer_child.py``: frames of results in the order
the files were given, each sent as soon as every file before it is answered. A PUT
is atomic, so a file is either wholly in the bucket or not at all; a file is reported
written only once its PUT has succeeded (retried meanwhile: ``TRAVERSE_S3_RETRY``).
"""

from __future__ import annotations

import collections
import os
import select
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from traverse_crawl.snapshots.batch_write import MAX_BATCH
from traverse_crawl.snapshots.file_text import encode
from traverse_crawl.storage.bucket import BucketLocation

IN_FLIGHT = 32  # PUTs at once; botocore's pool has as many connections (make_client)


def serve(
    frames: Any,
    bucket: dict[str, Any],
    summary: dict[str, Any],
    send: Callable[[int, Any], bool],
    failure: Callable[[BaseException | None], Any],
) -> bool:
    """Put every ``(key, snapshot)`` read from ``frames`` (``utils/frames.py``)
    until EOF, answering with ``send`` and ``failure`` (its own: it imports this module);
    False once the crawl stopped listening (the objects are still written)."""
    location = BucketLocation.from_description(bucket)
    pool = ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="bucket-writer")
    wake_read, wake_write = os.pipe()  # a finished PUT wakes the loop
    os.set_blocking(wake_read, False)
    os.set_blocking(frames.fd, False)
    poller = select.poll()
    poller.register(wake_read, select.POLLIN)
    watching = False  # frames.fd is registered
    pending: collections.deque[Future[BaseException | None]] = collections.deque()
    listening = True

    def put(key: str, snapshot: Any) -> BaseException | None:
        try:
            location.write(key, encode(snapshot))
        except Exception as exc:  # the I/O edge: this object fails, the others go on
            return exc
        return None

    def woken(_: Future[BaseException | None]) -> None:
        try:
            os.write(wake_write, b"x")
        except BlockingIOError:
            pass  # the loop has wake-ups waiting already

    os.set_blocking(wake_write, False)
    while True:
        room = IN_FLIGHT - len(pending)
        reading = not frames.eof and room > 0
        if reading != watching:  # full: only the PUTs' completions wake the loop
            if reading:
                poller.register(frames.fd, select.POLLIN)
            else:
                poller.unregister(frames.fd)
            watching = reading
        taken = frames.take(room) if room > 0 else []
        if not taken:
            if frames.eof and not pending:
                break  # every whole frame written and answered (a cut one is dropped)
            events = dict(poller.poll())
            if wake_read in events:
                try:
                    while os.read(wake_read, 4096):
                        pass
                except BlockingIOError:
                    pass
            if reading and frames.fd in events:
                try:
                    frames.read()
                except BlockingIOError:
                    pass
            taken = frames.take(IN_FLIGHT - len(pending))
        for key, snapshot in taken:
            future = pool.submit(put, key, snapshot)
            future.add_done_callback(woken)
            pending.append(future)
        answers: list[BaseException | None] = []
        while pending and pending[0].done() and len(answers) < MAX_BATCH:
            answers.append(pending.popleft().result())
        if answers:
            summary["batches"] += 1
            summary["files"] += len(answers)
            summary["failed"] += sum(error is not None for error in answers)
            listening = listening and send(1, [failure(error) for error in answers])
    pool.shutdown()
    os.close(wake_read)
    os.close(wake_write)
    return listening
