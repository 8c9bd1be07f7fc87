"""Every error message is one readable sentence naming the URL and the cause."""

from __future__ import annotations

import socket

import pytest_twisted

from tests.support.server import Reply


def _close(handler) -> None:
    handler.close_connection = True
    handler.connection.shutdown(socket.SHUT_RDWR)


def _hang_up(handler) -> Reply:
    _close(handler)
    return Reply(body="")


def _garbage(handler) -> Reply:
    handler.wfile.write(b"\x00\xffNOT HTTP \x1b[31m\r\n\r\n")
    _close(handler)
    return Reply(body="")


def _short_body(handler) -> Reply:
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly a little")
    _close(handler)
    return Reply(body="")


@pytest_twisted.ensureDeferred
async def test_network_errors_are_readable_sentences(server, crawl):
    server.site({"/": '<a href="/hangup">a</a><a href="/garbage">b</a><a href="/short">c</a>'})
    server.routes.update({"/hangup": _hang_up, "/garbage": _garbage, "/short": _short_body})
    result = await crawl(settings={"RETRY_TIMES": 0}, url=server.url("/"))
    errors = {p["url"]: p["fetch"]["error"] for p in result.manifest["pages"][1:]}
    assert errors == {
        server.url("/hangup"): {
            "kind": "network",
            "message": f"request to {server.url('/hangup')} failed: "
            "the server closed the connection without sending a response",
        },
        server.url("/garbage"): {
            "kind": "network",
            "message": f"request to {server.url('/garbage')} failed: "
            "the server sent a malformed HTTP response (non-integer status code)",
        },
        server.url("/short"): {
            "kind": "network",
            "message": f"request to {server.url('/short')} failed: "
            "the connection closed before the whole body arrived",
        },
    }
    for error in errors.values():
        assert "<" not in error["message"] and "\\x" not in error["message"]
