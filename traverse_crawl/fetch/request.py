"""The request sent is the URL recorded: WHATWG URLs byte for byte on the wire.

:class:`WhatwgRequest` keeps the URL from w3lib's ``safe_url_string``, and
:class:`ExactTargetDownloadHandler` keeps the request target from Twisted's
urllib re-serialisation (docs/architecture.md, "URLs on the wire").
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.core.downloader.handlers.http11 import (
    _BindAddressAgent,
    _ScrapyAgent,
)
from scrapy.exceptions import ResponseDataLossError
from scrapy.http import Response
from scrapy.utils._download_handlers import get_dataloss_msg, wrap_twisted_exceptions
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.web.client import URI
from twisted.web.iweb import IBodyProducer, IResponse

from traverse_crawl.fetch import urls
from traverse_crawl.fetch.handler import HeaderCappedHTTP11DownloadHandler

logger = logging.getLogger(__name__)

VERBATIM = "verbatim_url"  # Scrapy's meta key: Request keeps the URL as given


class WhatwgRequest(Request):
    """A ``Request`` for an http(s) URL as the WHATWG URL Standard serialises it.

    ``scrapy.Request.__init__`` passes a URL through w3lib's ``safe_url_string``
    (``/x?`` becomes ``/x``, ``|`` becomes ``%7C``, ``^`` in a query ``%5E``) unless
    the meta has Scrapy's ``verbatim_url`` key (Scrapy 2.17+). Here the URL is
    parsed with ada-url (fragment dropped) and kept verbatim, so
    ``request.url``, the request target sent and ``response.url`` are all that
    serialisation. Use it for every request the crawl makes (pages, robots.txt,
    sitemaps). A URL that is not http(s) raises ``ValueError``, as ``Request``
    does for a URL without a scheme. ``replace()``/``copy()`` (redirects, retries,
    the render escalation) keep the class, so every hop is one too.
    """

    def __init__(self, url: str, **kwargs: Any) -> None:
        href = urls.normalize(url)
        if href is None:
            raise ValueError(f"not an http(s) URL: {url!r}")
        kwargs["meta"] = {**(kwargs.get("meta") or {}), VERBATIM: True}
        super().__init__(href, **kwargs)


# Twisted's ``Agent`` parses the URL again with urllib and writes ``urlunparse``'s
# origin-form as the request target: an empty query loses its "?" and an empty
# ``;`` parameter its ";". Scrapy has no setting or signal between the Request and
# the request line, so the handler's agent classes (``_ScrapyAgent``,
# ``_BindAddressAgent``, private to Scrapy 2.19, which requirements pin) are
# subclassed; ``tests/test_request_target.py`` fails if a Scrapy upgrade changes
# what they do. A proxied request (meta ``proxy``) keeps Scrapy's agents: its
# absolute-form target is the URL as it is.
class _ExactTargetAgent(_BindAddressAgent):
    """Twisted's Agent, writing the URI's own path and query as the request target.

    ``Agent.request`` computes the target from its urllib parse and passes it to
    ``_requestWithEndpoint`` in the same call; this replaces it there.
    """

    _target = b"/"

    def request(
        self,
        method: bytes,
        uri: bytes,
        headers: Any = None,
        bodyProducer: IBodyProducer | None = None,
    ) -> Deferred[IResponse]:
        # Scrapy encodes the URL as ASCII; a WHATWG serialisation always is.
        self._target = urls.request_target(uri.strip().decode("ascii")).encode("ascii")
        return super().request(method, uri, headers, bodyProducer)

    def _requestWithEndpoint(
        self,
        key: tuple[Any, ...],
        endpoint: Any,
        method: bytes,
        parsedURI: URI,
        headers: Any,
        bodyProducer: IBodyProducer | None,
        requestPath: bytes,
    ) -> Deferred[IResponse]:
        return super()._requestWithEndpoint(
            key, endpoint, method, parsedURI, headers, bodyProducer, self._target
        )


class _ExactTargetScrapyAgent(_ScrapyAgent):
    def _get_agent(self, request: Request, timeout: float) -> Any:
        agent = super()._get_agent(request, timeout)
        if type(agent) is _BindAddressAgent:  # a direct connection, not a proxy
            # Same state, one method more: Scrapy still decides everything about
            # the agent (bind address, pool, TLS); only the target changes.
            agent.__class__ = _ExactTargetAgent
        return agent


class ExactTargetDownloadHandler(HeaderCappedHTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler, sending each request target exactly as its URL has
    it (``urls.request_target``), with the response header cap of ``fetch.handler``."""

    async def download_request(self, request: Request) -> Response:
        agent = _ExactTargetScrapyAgent(
            contextFactory=self._contextFactory,
            bindAddress=self._bind_address,
            pool=self._pool,
            maxsize=self._default_maxsize,
            warnsize=self._default_warnsize,
            fail_on_dataloss=self._fail_on_dataloss,
            crawler=self._crawler,
            tls_verbose_logging=self._tls_verbose_logging,
        )
        try:
            with wrap_twisted_exceptions():
                return await maybe_deferred_to_future(agent.download_request(request))
        except ResponseDataLossError:
            if not self._fail_on_dataloss_warned:
                logger.warning(get_dataloss_msg(request.url))
                self._fail_on_dataloss_warned = True
            raise
