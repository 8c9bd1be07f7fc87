"""The WARC writer process: records built, hashed, compressed and appended off the crawl.

A process, not a thread: a capture is bound by its one reactor thread, and a writer
thread shares the GIL with it (warcio's record building is Python code); that cost
the crawl about 1 ms of wall time per page beyond the 0.4 ms the records themselves
cost. The crawl (``warc/writer.py``) only sends what a record needs down a pipe.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NamedTuple

from traverse_crawl.snapshots.source_ref import build_source_ref
from traverse_crawl.utils.frames import begin, finish, frame, more_within, next_batch, send
from traverse_crawl.warc import records as warc
from traverse_crawl.warc.digests import DigestIndex

if TYPE_CHECKING:
    from traverse_crawl.snapshots.model import Snapshot

_ID = "WARC-Record-ID"
# The protocol (the frames of ``utils/frames.py``; the crawl's side is
# ``warc/writer.py``): on the child's stdin first the file settings (``Writer``'s
# arguments), then one ``Exchange`` or ``Metadata`` per job as a plain tuple
# (``job_frame``), written in order. On stdout, how many jobs it has written since it
# last said (an int): once it has no job left to write, or every ACK_EVERY seconds while
# it is busy (so the crawl wakes for it a few times a second, not once a page, and its
# stall watchdog sees a writer that stops); a failure's text (a str) when it
# happens (the crawl logs it: the child prints nothing on stderr, which may be the
# crawl's JSON log); and at EOF (the crawl closed the pipe, or died), once the open
# file is closed and renamed, its summary (``Summary``). It ignores SIGINT and SIGTERM:
# the crawl closes the pipe once its graceful shutdown is done, and the child then
# finishes the records it was given (a SIGKILL of both leaves at most the last record
# of the ``.open`` file incomplete).
MAX_BATCH = 64
ACK_EVERY = 0.1  # seconds
RawHeaders = list[tuple[bytes, list[bytes]]]  # Scrapy's Headers.items(): name, values


class Exchange(NamedTuple):
    """One download: the request sent and the response (or 304) received."""

    key: int  # the crawl's number for it; a page's ``Metadata`` names it
    time: float  # when it was received (UNIX seconds), the records' WARC-Date
    url: str
    status: int
    protocol: str
    headers: RawHeaders
    body: bytes
    truncated: bool
    method: str
    request_headers: RawHeaders
    request_body: bytes
    prior: Snapshot | None  # the stored snapshot a 304 revalidated: a revisit
    page: bool  # a page's response: its Metadata follows
    supersedes: int | None  # the same page's earlier hop (a redirect), no Metadata follows


class Metadata(NamedTuple):
    """A page's metadata record, after its last response (``key``)."""

    key: int
    time: float
    url: str
    fields: dict[str, Any]
    source_ref: str


@dataclass
class Summary:
    records: int = 0
    files: int = 0
    failures: int = 0
    error: str = ""  # the first failure
    cpu_s: float = 0.0  # the writer process's own CPU time (user + system)


def date(moment: float) -> str:
    return warc.warc_date(datetime.fromtimestamp(moment, timezone.utc))


def header_pairs(raw: RawHeaders) -> warc.Headers:
    """Scrapy's order and casing, one pair per value."""
    return [(name.decode("latin-1"), v.decode("latin-1")) for name, values in raw for v in values]


class Writer:
    """The child's side: what the extension's writer thread did before."""

    def __init__(
        self,
        directory: str,
        prefix: str,
        max_size: int,
        info: dict[str, str],
        pid: int,
        store: str,
        buckets: dict[str, Any] | None = None,
    ) -> None:
        # ``buckets``: the ``s3://`` WARC directory and store, if any (warc/bucket_files.py)
        found = buckets or {}
        if found.get("warc"):
            from traverse_crawl.warc.bucket_files import bucket_warc_files

            self.files: warc.RollingWarcFiles = bucket_warc_files(
                found["warc"], prefix=prefix, max_size=max_size, info=info, pid=pid
            )
        else:
            self.files = warc.RollingWarcFiles(directory, prefix, max_size, info, pid)
        if found.get("store"):
            from traverse_crawl.warc.bucket_files import bucket_digest_index

            self.digests: DigestIndex = bucket_digest_index(found["store"])
        else:
            self.digests = DigestIndex(store, directory)  # in the store, not among the WARCs
        self.pages: dict[int, tuple[str, warc.Written | None]] = {}  # key -> response written
        self.summary = Summary()

    def exchange(self, x: Exchange) -> None:
        when = date(x.time)
        extra = {_ID: warc.new_record_id()}
        headers = header_pairs(x.headers)
        written = None
        if x.prior is not None:
            earlier = self.digests.earlier(build_source_ref(x.prior), x.prior)
            record = warc.revisit_record(x.url, x.status, x.protocol, headers, when, earlier, extra)
        else:
            record = warc.response_record(x.url, x.status, x.protocol, headers, x.body, when, extra)
            if x.truncated:
                record.rec_headers.add_header("WARC-Truncated", "length")
            written = warc.written(record)
        if x.supersedes is not None:
            self.pages.pop(x.supersedes, None)
        if x.page:
            self.pages[x.key] = (extra[_ID], written)
        request = header_pairs(x.request_headers)
        sent = warc.request_record(x.url, x.method, request, x.request_body, when, extra[_ID])
        self.write(sent, record)

    def metadata(self, m: Metadata) -> None:
        record_id, response = self.pages.pop(m.key, ("", None))
        self.write(warc.metadata_record(m.url, m.fields, date(m.time), record_id))
        if m.source_ref and response is not None:
            self.digests.add(m.source_ref, response)

    def write(self, *records: Any) -> None:
        before = len(self.files.closed_files)
        try:
            self.files.write(*records)
        except Exception as exc:  # the I/O edge: the crawl goes on without these records
            self.fail(f"WARC write to {self.files.directory} failed: {exc}")
            return
        self.summary.records += len(records)
        self.summary.files += len(self.files.closed_files) - before

    def fail(self, message: str) -> None:
        self.summary.failures += 1
        if not self.summary.error:
            self.summary.error = message
            send(1, message)  # now; the crawl logs it, and again at the end

    def close(self) -> Summary:
        before = len(self.files.closed_files)
        try:
            self.files.close()
        except OSError as exc:
            self.fail(f"WARC file {self.files.path} could not be closed: {exc}")
        for failed in getattr(self.files, "finish", list)():  # a bucket's uploads
            self.fail(f"WARC upload failed: {failed}")
        try:
            self.digests.close()
        except OSError as exc:
            self.fail(f"the payload digests could not be written: {exc}")
        self.summary.files += len(self.files.closed_files) - before
        return self.summary


def job_frame(job: Exchange | Metadata) -> bytes:
    """One job's frame: marshal takes exact builtins, so the job goes as a plain tuple."""
    return frame(tuple(job))


_JOBS: dict[int, Any] = {len(Exchange._fields): Exchange, len(Metadata._fields): Metadata}


def main() -> None:
    """The child process: write the jobs read on stdin until EOF, then the summary."""
    frames, config = begin()
    if config is None:
        return
    writer = Writer(**config)
    listening = True
    written, said = 0, time.monotonic()
    while batch := next_batch(frames, MAX_BATCH):
        written += len(batch)
        for fields in batch:
            job = _JOBS[len(fields)](*fields)
            try:
                if isinstance(job, Exchange):
                    writer.exchange(job)
                else:
                    writer.metadata(job)
            except Exception as exc:  # a record warcio refuses: skip it, keep the file valid
                writer.fail(f"WARC record for {job.url} not written: {exc!r}")
        # Told when due, or when no more comes before: an idle writer owes nothing.
        left = said + ACK_EVERY - time.monotonic()
        if left <= 0 or not more_within(frames, left):
            listening = listening and send(1, written)
            written, said = 0, time.monotonic()
    summary = asdict(writer.close())
    del summary["cpu_s"]  # ``finish`` says it
    if listening:
        finish(summary)
