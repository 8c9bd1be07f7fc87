"""``s3://BUCKET/PREFIX``: a location in any S3-compatible bucket, through botocore.

botocore is the client Scrapy's own S3 feed storage uses; docs/object-storage.md says
why it was chosen over obstore, with the figures. Endpoint and credentials come from
Scrapy's ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN`` and ``AWS_REGION_NAME``; an unset one is left to botocore's
standard chain (the ``AWS_*`` environment, ``~/.aws/config``, instance roles).

Every call is retried with full-jitter backoff for up to ``TRAVERSE_S3_RETRY`` seconds
when the endpoint cannot be reached or answers 5xx, 429 or a throttling code; other
errors (no such bucket, access denied) fail at once, and a body that fails its checksum
is tried ``CHECKSUM_TRIES`` times in all. Each attempt's connect and read timeouts fit in
that budget, so a blackholed endpoint costs a call about the budget, not botocore's 30 s.
A read tells "not stored" (None: a 404) from "could not read" (``BucketReadError``).
A PUT is atomic in S3: a reader sees the whole object or none, so a retried write of
the same key is safe. Files
larger than ``MULTIPART_SIZE`` go up in parts, and appear only when the last part is
committed. These calls block: the crawl makes them off its event loop (the snapshot
writer process, a thread) or once per seed.
"""

from __future__ import annotations

import logging
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, BinaryIO, TypeVar, cast

from traverse_crawl.config.extras import require_extra
from traverse_crawl.config.scrapy_settings import parse_delay
from traverse_crawl.errors import ConfigError

logger = logging.getLogger(__name__)

T = TypeVar("T")
MULTIPART_SIZE = 64 * 1024 * 1024  # bytes: a larger file is uploaded in parts of this size
DEFAULT_RETRY = 30.0  # seconds, TRAVERSE_S3_RETRY
RETRY_BASE = 0.1  # seconds: the first backoff's bound, doubled per attempt
RETRY_CAP = 5.0  # seconds: no single backoff is longer
CONNECT_TIMEOUT = 5.0  # seconds, an attempt's connect timeout (or the budget, if less)
READ_TIMEOUT = 30.0  # seconds, an attempt's read timeout (or the budget, if less)
MIN_TIMEOUT = 1.0  # seconds: a budget of 0 (no retry) still gives one attempt this long
# A body that fails its checksum twice in a row is not a passing fault: a third try, then
# the error (the corruption is on the path or in the store, not in one response).
CHECKSUM_TRIES = 3
_RETRIED_CODES = frozenset(
    {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "InternalError",
     "ServiceUnavailable", "RequestTimeTooSkewed"}
)  # fmt: skip
SETTINGS = (
    ("endpoint_url", "AWS_ENDPOINT_URL"),
    ("access_key_id", "AWS_ACCESS_KEY_ID"),
    ("secret_access_key", "AWS_SECRET_ACCESS_KEY"),
    ("session_token", "AWS_SESSION_TOKEN"),
    ("region_name", "AWS_REGION_NAME"),
)


class BucketError(OSError):
    """A bucket call that failed for good; ``str()`` names the object and the cause."""


class BucketReadError(BucketError):
    """An object or a listing that could not be read (after the retries): it may well
    be stored. Not stored at all is ``read``'s None."""


@dataclass(frozen=True)
class BucketConfig:
    """The client's settings; None leaves a value to botocore's standard chain."""

    endpoint_url: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    region_name: str | None = None
    retry_seconds: float = DEFAULT_RETRY

    def as_dict(self) -> dict[str, Any]:
        """Builtins only, for the writer process's ``marshal`` frames."""
        return asdict(self)


def bucket_config(name: str, settings: Mapping[str, Any] | Any) -> BucketConfig:
    """The ``AWS_*`` settings (and ``TRAVERSE_S3_RETRY``) of Scrapy's settings or a dict."""
    values: dict[str, Any] = {}
    for attr, setting in SETTINGS:
        value = settings.get(setting)
        values[attr] = str(value) if value not in (None, "") else None
    raw = settings.get("TRAVERSE_S3_RETRY")
    retry = DEFAULT_RETRY if raw in (None, "") else parse_delay("TRAVERSE_S3_RETRY", raw)
    return BucketConfig(**values, retry_seconds=retry)


def attempt_timeouts(retry_seconds: float) -> tuple[float, float]:
    """An attempt's connect and read timeouts: botocore's defaults, or the retry budget
    when it is shorter (never below ``MIN_TIMEOUT``), so one attempt fits in it."""
    budget = max(retry_seconds, MIN_TIMEOUT)
    return min(CONNECT_TIMEOUT, budget), min(READ_TIMEOUT, budget)


def make_client(config: BucketConfig) -> Any:
    """A botocore S3 client; botocore's own retries are off (``call`` retries)."""
    require_extra("s3://", "s3")
    import botocore.session
    from botocore.config import Config

    session = botocore.session.get_session()
    connect_timeout, read_timeout = attempt_timeouts(config.retry_seconds)
    return session.create_client(
        "s3",
        endpoint_url=config.endpoint_url,
        region_name=config.region_name,
        aws_access_key_id=config.access_key_id,
        aws_secret_access_key=config.secret_access_key,
        aws_session_token=config.session_token,
        config=Config(
            retries={"total_max_attempts": 1},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=32,
        ),
    )


def _status(exc: BaseException) -> tuple[int, str]:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return 0, ""
    code = str(response.get("Error", {}).get("Code", ""))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return int(status or 0), code


def retriable(exc: BaseException) -> bool:
    """The endpoint was away or overloaded (worth another try), not a refusal."""
    status, code = _status(exc)
    if status or code:
        return status >= 500 or status == 429 or code in _RETRIED_CODES
    # botocore's connection errors (EndpointConnectionError, ReadTimeoutError, ...)
    # are not ClientErrors: they carry no response.
    return True


def checksum_failed(exc: BaseException) -> bool:
    """botocore's ``FlexibleChecksumError``: the body read does not match the checksum
    the store sent with it (by name: botocore is an optional dependency)."""
    return any(cls.__name__ == "FlexibleChecksumError" for cls in type(exc).__mro__)


def describe(exc: BaseException) -> str:
    status, code = _status(exc)
    if code:
        message = getattr(exc, "response", {}).get("Error", {}).get("Message", "")
        return f"{code}{f' ({status})' if status else ''}{f': {message}' if message else ''}"
    return str(exc) or type(exc).__name__


class BucketLocation:
    """``s3://bucket/prefix``; ``key`` is a path under the prefix with ``/`` separators."""

    remote = True

    def __init__(
        self,
        bucket: str,
        prefix: str,
        config: BucketConfig,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix  # "" or ends with "/"
        self.config = config
        self.url = f"s3://{bucket}/{prefix}".rstrip("/")
        self.sleep = sleep
        self._client: Any = None
        self._lock = threading.Lock()

    def describe(self) -> dict[str, Any]:
        """What the writer process needs to open the same location."""
        return {"bucket": self.bucket, "prefix": self.prefix, "config": self.config.as_dict()}

    @classmethod
    def from_description(cls, found: dict[str, Any]) -> BucketLocation:
        return cls(found["bucket"], found["prefix"], BucketConfig(**found["config"]))

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = make_client(self.config)
        return self._client

    def key(self, key: str) -> str:
        return self.prefix + key

    def shown(self, key: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{key}"

    def call(self, what: str, action: Callable[[], T], error: type[BucketError] = BucketError) -> T:
        """``action()``, retried with full-jitter backoff while the endpoint is away;
        ``error`` (with the object and the cause) once it fails for good."""
        deadline = time.monotonic() + self.config.retry_seconds
        attempt = checksums = 0
        while True:
            try:
                return action()
            except Exception as exc:  # the I/O edge: botocore's errors have no one base
                checksums += checksum_failed(exc)
                if (
                    not retriable(exc)
                    or checksums >= CHECKSUM_TRIES
                    or time.monotonic() >= deadline
                ):
                    raise error(f"{what}: {describe(exc)}") from exc
                wait = random.uniform(0, min(RETRY_CAP, RETRY_BASE * 2**attempt))
                attempt += 1
                logger.debug("%s failed (%s); retrying in %.2f s", what, describe(exc), wait)
                self.sleep(min(wait, max(0.0, deadline - time.monotonic())))

    # -- the Location interface ----------------------------------------------

    def check(self, name: str) -> None:
        """ConfigError naming ``name`` when the endpoint or the bucket is not there."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ConfigError:
            raise
        except Exception as exc:
            status, _ = _status(exc)
            if status == 404:
                reason = f"the bucket {self.bucket!r} does not exist"
            elif status == 403:
                reason = f"access to the bucket {self.bucket!r} is denied"
            else:
                where = self.config.endpoint_url or "the default AWS endpoint"
                reason = f"cannot reach {where} (AWS_ENDPOINT_URL): {describe(exc)}"
            raise ConfigError(name, f"{self.url}: {reason}") from None

    def exists(self) -> bool:
        """The bucket holds something under the prefix (a directory that exists)."""

        def probe() -> bool:
            found = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self.prefix, MaxKeys=1)
            return bool(found.get("KeyCount", 0))

        try:
            return self.call(f"list {self.url}", probe)
        except BucketError:
            return False

    def read(self, key: str) -> bytes | None:
        def get() -> bytes | None:
            try:
                answer = self.client.get_object(Bucket=self.bucket, Key=self.key(key))
            except Exception as exc:
                if _status(exc) == (404, "NoSuchKey") or _status(exc)[1] == "NoSuchKey":
                    return None
                raise
            return bytes(answer["Body"].read())

        return self.call(f"read {self.shown(key)}", get, BucketReadError)

    def write(self, key: str, data: bytes) -> None:
        self.call(
            f"write {self.shown(key)}",
            lambda: self.client.put_object(Bucket=self.bucket, Key=self.key(key), Body=data),
        )

    def write_file(self, key: str, local_path: str) -> None:
        size = os.path.getsize(local_path)
        if size <= MULTIPART_SIZE:
            with open(local_path, "rb") as handle:
                self.write(key, handle.read())
            return
        self._write_parts(key, local_path)

    def write_stream(self, key: str, write: Callable[[BinaryIO], None]) -> None:
        with tempfile.NamedTemporaryFile(prefix=".traverse-upload-", suffix=".tmp") as handle:
            write(cast(BinaryIO, handle))
            handle.flush()
            self.write_file(key, handle.name)

    def _write_parts(self, key: str, local_path: str) -> None:
        """A multipart upload: the object appears whole at ``complete``, or not at all."""
        full, shown = self.key(key), self.shown(key)
        upload = self.call(
            f"write {shown}",
            lambda: self.client.create_multipart_upload(Bucket=self.bucket, Key=full),
        )["UploadId"]
        try:
            parts = []
            with open(local_path, "rb") as handle:
                number = 1
                while chunk := handle.read(MULTIPART_SIZE):
                    answer = self.call(
                        f"write {shown} (part {number})",
                        lambda chunk=chunk, number=number: self.client.upload_part(  # type: ignore[misc]
                            Bucket=self.bucket, Key=full, UploadId=upload,
                            PartNumber=number, Body=chunk,
                        ),
                    )  # fmt: skip
                    parts.append({"ETag": answer["ETag"], "PartNumber": number})
                    number += 1
            self.call(
                f"write {shown}",
                lambda: self.client.complete_multipart_upload(
                    Bucket=self.bucket, Key=full, UploadId=upload,
                    MultipartUpload={"Parts": parts},
                ),
            )  # fmt: skip
        except BaseException:
            try:
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=full, UploadId=upload)
            except Exception as exc:  # the upload's parts expire by the bucket's rules
                logger.debug("could not abort the upload of %s: %s", shown, describe(exc))
            raise

    def names(self, key: str = "") -> list[str]:
        base = self.prefix + (key.rstrip("/") + "/" if key else "")

        def listing() -> list[str]:
            found: set[str] = set()
            paginator = self.client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=base, Delimiter="/"):
                for entry in page.get("Contents", []):
                    found.add(entry["Key"][len(base) :])
                for entry in page.get("CommonPrefixes", []):
                    found.add(entry["Prefix"][len(base) :].rstrip("/"))
            found.discard("")
            return sorted(found)

        return self.call(f"list {self.shown(key)}", listing, BucketReadError)

    def delete(self, key: str) -> None:
        self.call(
            f"delete {self.shown(key)}",
            lambda: self.client.delete_object(Bucket=self.bucket, Key=self.key(key)),
        )
