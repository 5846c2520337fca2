"""A ``SlotStreamingResponse`` served by Django's ASGI handler: each piece goes out as soon as
it is made (Django alone would read a sync stream to its end first), and a client that goes
away closes the stream and gives the slot back (Django then never calls ``close()``)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.core.handlers.asgi import ASGIHandler

from portal.machinery import streams


class Endless:
    """A stream that yields one piece per ``allow`` and records when it was closed."""

    def __init__(self) -> None:
        self.allowed = threading.Semaphore(0)
        self.closed = threading.Event()

    def __iter__(self):
        try:
            while True:
                self.allowed.acquire()
                yield b"piece\n"
        finally:
            self.closed.set()

    def allow(self, n: int = 1) -> None:
        for _ in range(n):
            self.allowed.release()


async def serve(response, sent: asyncio.Queue) -> None:
    async def send(message) -> None:
        await sent.put(message)

    await ASGIHandler().send_response(response, send)


async def next_body(sent: asyncio.Queue) -> bytes:
    while True:
        message = await asyncio.wait_for(sent.get(), timeout=5)
        if message["type"] == "http.response.body":
            return message["body"]


@pytest.fixture
def slot():
    release = streams.acquire("ann")
    yield release
    release()
    assert streams.in_use() == (0, {})


def test_pieces_are_sent_as_they_are_made(slot):
    endless = Endless()
    response = streams.SlotStreamingResponse(iter(endless), release=slot)

    async def scenario() -> None:
        sent: asyncio.Queue = asyncio.Queue()
        task = asyncio.create_task(serve(response, sent))
        endless.allow()
        assert await next_body(sent) == b"piece\n"  # the stream has not ended
        endless.allow()
        assert await next_body(sent) == b"piece\n"
        task.cancel()
        endless.allow()  # lets the piece being read finish, so the close can run
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())


def test_a_client_that_goes_away_closes_the_stream_and_frees_the_slot():
    endless = Endless()
    release = streams.acquire("ann")
    response = streams.SlotStreamingResponse(iter(endless), release=release)

    async def scenario() -> None:
        sent: asyncio.Queue = asyncio.Queue()
        task = asyncio.create_task(serve(response, sent))
        endless.allow()
        await next_body(sent)
        assert streams.in_use() == (1, {"ann": 1})
        task.cancel()  # what the handler does when the client disconnects
        endless.allow()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert endless.closed.wait(5), "the stream was never closed"
    assert streams.in_use() == (0, {})


def test_a_stream_that_ends_frees_the_slot():
    release = streams.acquire("ann")
    response = streams.SlotStreamingResponse(iter([b"a", b"b"]), release=release)

    async def scenario() -> list[bytes]:
        sent: asyncio.Queue = asyncio.Queue()
        await serve(response, sent)
        bodies = []
        while not sent.empty():
            message = sent.get_nowait()
            if message["type"] == "http.response.body":
                bodies.append(message.get("body", b""))
        return bodies

    assert b"".join(asyncio.run(scenario())) == b"ab"
    assert streams.in_use() == (0, {})


def test_empty_pieces_are_not_sent_but_let_a_gone_client_stop_the_stream():
    quiet = Endless()

    def polls():
        for _ in quiet:  # each allow() is one quiet poll
            yield b""

    release = streams.acquire("ann")
    response = streams.SlotStreamingResponse(polls(), release=release)

    async def scenario() -> list[dict]:
        sent: asyncio.Queue = asyncio.Queue()
        task = asyncio.create_task(serve(response, sent))
        quiet.allow(3)
        await asyncio.sleep(0.2)
        task.cancel()  # the client went away while nothing was being written
        quiet.allow()
        await asyncio.gather(task, return_exceptions=True)
        return [sent.get_nowait() for _ in range(sent.qsize())]

    messages = asyncio.run(scenario())
    assert not [m for m in messages if m["type"] == "http.response.body" and m.get("body")]
    assert quiet.closed.wait(5)
    assert streams.in_use() == (0, {})


@pytest.mark.django_db  # close() sends request_finished, which looks at the connections
def test_a_wsgi_server_iterates_only_the_text():
    release = streams.acquire("ann")
    response = streams.SlotStreamingResponse(iter([b"a", b"", b"b"]), release=release)
    assert list(response) == [b"a", b"b"]
    response.close()
    assert streams.in_use() == (0, {})
