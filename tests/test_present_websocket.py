"""The kernel websocket that sends each message at once (perfmodel.present.websocket)."""

from __future__ import annotations

import asyncio
import socket

import pytest

pytest.importorskip("voila")


def _nodelay_seen_by_server(switch: bool) -> int:
    """TCP_NODELAY on the server's side of a real Tornado websocket, as its handler opens,
    after :func:`send_at_once` when ``switch``."""
    import tornado.web
    import tornado.websocket

    from perfmodel.present.websocket import send_at_once

    seen: list[int] = []

    class Handler(tornado.websocket.WebSocketHandler):
        def open(self) -> None:
            if switch:
                send_at_once(self)
            stream = self.ws_connection.stream  # type: ignore[union-attr]
            seen.append(stream.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            self.write_message("opened")

    async def run() -> None:
        app = tornado.web.Application([("/ws", Handler)])
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        server = tornado.httpserver.HTTPServer(app)
        server.add_sockets(sockets)
        port = sockets[0].getsockname()[1]
        client = await tornado.websocket.websocket_connect(f"ws://127.0.0.1:{port}/ws")
        assert await client.read_message() == "opened"
        client.close()
        server.stop()

    import tornado.httpserver
    import tornado.netutil

    asyncio.run(run())
    return seen[0]


def test_tornado_leaves_nagle_on_and_send_at_once_turns_it_off():
    assert _nodelay_seen_by_server(switch=False) == 0
    assert _nodelay_seen_by_server(switch=True) != 0


def test_voila_is_given_the_connection_and_accepts_it():
    from traitlets.utils.importstring import import_item
    from voila.app import Voila

    from perfmodel.present.demo import voila_command
    from perfmodel.present.websocket import NoDelayKernelConnection

    command, _ = voila_command("deck.ipynb", port=8866, open_browser=False)
    flag = "--Voila.kernel_websocket_connection_class="
    (setting,) = [a for a in command if a.startswith(flag)]
    named = import_item(setting.removeprefix(flag))
    assert named is NoDelayKernelConnection
    app = Voila()
    app.kernel_websocket_connection_class = named  # the trait checks the class's kind
    assert app.kernel_websocket_connection_class is NoDelayKernelConnection


def test_make_lab_gives_jupyterlab_the_connection_too():
    from conftest import ROOT
    from perfmodel.present.demo import NO_DELAY_CONNECTION

    makefile = (ROOT / "jupyter" / "lab.mk").read_text(encoding="utf-8")  # the Makefile's part
    lab = makefile[makefile.index("\nlab:") :]
    assert f"--ServerApp.kernel_websocket_connection_class={NO_DELAY_CONNECTION}" in lab
