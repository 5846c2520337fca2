"""The watch gate: watches open a few at a time per web process, waiting on the event loop, and
give their place back once their response starts or however else they end; every other
request goes straight through."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from portal.machinery.watch_gate import WatchGate, is_watch


def scope(query: str = "watch=true", method: str = "GET", path: str = "/api/v1/configmaps"):
    return {"type": "http", "method": method, "path": path, "query_string": query.encode()}


class Opening:
    """A fake application: each request records that it entered, then waits to be told to
    start its response (or to fail), then streams until cancelled."""

    def __init__(self) -> None:
        self.inside = 0
        self.most_inside = 0
        self.entered: list[str] = []
        self.start: dict[str, asyncio.Event] = {}
        self.fail: set[str] = set()

    async def __call__(self, scope, receive, send) -> None:
        name = scope["path"]
        self.entered.append(name)
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        try:
            await self.start.setdefault(name, asyncio.Event()).wait()
            if name in self.fail:
                raise RuntimeError("the view failed")
        finally:
            self.inside -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await asyncio.Event().wait()  # a watch streams until its client goes away

    def let_start(self, name: str) -> None:
        self.start.setdefault(name, asyncio.Event()).set()


async def nothing() -> dict:
    await asyncio.Event().wait()
    return {}


async def discard(message) -> None:
    return None


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def serve(gate: WatchGate, request: dict) -> asyncio.Task:
    return asyncio.create_task(gate(request, nothing, discard))


def watches(gate: WatchGate, count: int) -> list[asyncio.Task]:
    return [serve(gate, scope(path=f"/w{index}")) for index in range(count)]


async def stop(tasks: list[asyncio.Task]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.parametrize(
    ("query", "method", "gated"),
    [
        ("watch=true", "GET", True),
        ("watch=1", "GET", True),
        ("labelSelector=a%3Db&watch=True", "GET", True),
        ("watch=false&watch=true", "GET", True),  # the last value wins, as in the view
        ("watch=true&watch=false", "GET", False),
        ("watch=false", "GET", False),
        ("watch=", "GET", False),
        ("", "GET", False),
        ("watchers=true", "GET", False),
        ("watch=true", "POST", False),
    ],
)
def test_what_counts_as_a_watch_is_what_the_list_view_streams(query, method, gated):
    assert is_watch(scope(query, method)) is gated


def test_a_websocket_or_lifespan_scope_is_no_watch():
    assert not is_watch({"type": "lifespan"})
    assert not is_watch({**scope(), "type": "websocket"})


def test_at_most_the_setting_open_at_once_and_each_start_lets_the_next_in(settings):
    settings.KRUNTIMES_WATCH_OPENINGS = 3
    app = Opening()

    async def scenario() -> None:
        tasks = watches(WatchGate(app), 10)
        await settle()
        assert app.entered == ["/w0", "/w1", "/w2"]  # the rest wait, first come first served
        app.let_start("/w0")
        await settle()
        assert app.entered[3:] == ["/w3"]  # w0 streams on, outside the gate
        for index in range(1, 10):
            app.let_start(f"/w{index}")
            await settle()
        assert len(app.entered) == 10
        assert app.most_inside == 3
        await stop(tasks)

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "openings, started, entered",
    [(None, 6, 4), (0, 20, 20)],
    ids=["the default is four", "zero turns the gate off"],
)
def test_the_setting_decides_how_many_open_at_once(settings, openings, started, entered):
    if openings is None:
        del settings.KRUNTIMES_WATCH_OPENINGS
    else:
        settings.KRUNTIMES_WATCH_OPENINGS = openings
    app = Opening()

    async def scenario() -> None:
        tasks = watches(WatchGate(app), started)
        await settle()
        assert len(app.entered) == entered
        await stop(tasks)

    asyncio.run(scenario())


def test_other_requests_never_wait_behind_watches_opening(settings):
    settings.KRUNTIMES_WATCH_OPENINGS = 1
    app = Opening()

    async def scenario() -> None:
        gate = WatchGate(app)
        tasks = watches(gate, 5)
        await settle()
        assert app.entered == ["/w0"]
        tasks += [
            serve(gate, scope("", path="/get")),
            serve(gate, scope("watch=false", path="/list")),
            serve(gate, scope("watch=true", method="POST", path="/create")),
        ]
        await settle()
        assert app.entered == ["/w0", "/get", "/list", "/create"]
        await stop(tasks)

    asyncio.run(scenario())


@pytest.mark.parametrize("ending", ["client gone", "view failed"])
def test_an_opening_that_ends_early_gives_the_place_back(settings, ending):
    """Cancelled (what the server does when the client disconnects) or failed: either way the
    next waiting watch gets the place."""
    settings.KRUNTIMES_WATCH_OPENINGS = 1
    app = Opening()

    async def scenario() -> None:
        tasks = watches(WatchGate(app), 2)
        await settle()
        assert app.entered == ["/w0"]
        if ending == "client gone":
            tasks[0].cancel()
        else:
            app.fail.add("/w0")
            app.let_start("/w0")
        await settle()
        assert app.entered == ["/w0", "/w1"]
        if ending == "view failed":
            assert isinstance(tasks[0].exception(), RuntimeError)
        await stop(tasks)

    asyncio.run(scenario())


def test_a_client_gone_while_waiting_takes_no_place(settings):
    settings.KRUNTIMES_WATCH_OPENINGS = 1
    app = Opening()

    async def scenario() -> None:
        gate = WatchGate(app)
        tasks = watches(gate, 3)
        await settle()
        tasks[1].cancel()  # waiting behind w0
        await settle()
        app.let_start("/w0")
        await settle()
        assert app.entered == ["/w0", "/w2"]
        await stop(tasks)

    asyncio.run(scenario())


def test_each_event_loop_has_its_own_places(settings):
    """A gate serves one web process's loop; a second loop (a test, a restart) starts empty."""
    settings.KRUNTIMES_WATCH_OPENINGS = 1
    gate = WatchGate(Opening())

    async def one_loop() -> int:
        gate.app = app = Opening()  # its events belong to one loop
        tasks = watches(gate, 2)
        await settle()
        await stop(tasks)
        return len(app.entered)

    assert asyncio.run(one_loop()) == 1
    assert asyncio.run(one_loop()) == 1


def test_the_served_application_is_gated():
    """``portal.asgi`` (what up's web workers serve), in a fresh interpreter as a server: the
    function gateway first (it takes only invoke paths), then the gate, then Django."""
    code = (
        "import portal.asgi as a; from portal.machinery.watch_gate import WatchGate; "
        "from scheduling.gateway.app import InvokeGateway; g = a.application; "
        "print(isinstance(g, InvokeGateway) and isinstance(g.app, WatchGate) "
        "and g.app.app is a.django_application)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        check=False,
    )
    assert result.stdout.strip() == "True", result.stderr
