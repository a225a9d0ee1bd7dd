"""A kernel's messages sent to the browser at once, not held back by Nagle's algorithm.

A move of an explorer's control is answered by a handful of small messages from the kernel:
``busy``, the control's echo, the new picture, ``idle``. Jupyter's server relays them to the
browser over a websocket, and Tornado leaves Nagle's algorithm on for a websocket: a small
write waits while an earlier one is still unacknowledged. The browser acknowledges the
first message late (Linux delays an ACK by up to 40 ms, hoping to send it with data), so
the message after ``busy`` reached the page 40 ms late (Linux's shortest delayed ACK) on a
move whose answer followed an earlier one closely, as a slider dragged through several
values does. Dragged in four steps, a text explorer's slider took 78 to 80 ms from the mouse
released to the new text painted in Chromium on 2 cores; with the socket set to send at once
(``TCP_NODELAY``), 39 to 44 ms.

:func:`perfmodel.present.demo.voila_command` gives Voilà this connection (by its import path,
:data:`perfmodel.present.demo.NO_DELAY_CONNECTION`) through its
``kernel_websocket_connection_class`` setting, and ``make lab`` gives it to JupyterLab as
``--ServerApp.kernel_websocket_connection_class``.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

__all__ = ["NoDelayKernelConnection", "send_at_once"]


def send_at_once(websocket: Any) -> None:
    """Switch Nagle's algorithm off on an open websocket: each message leaves when written.

    Parameters
    ----------
    websocket : tornado.websocket.WebSocketHandler
        An open websocket (one whose handshake is done).
    """
    websocket.set_nodelay(True)


class NoDelayKernelConnection(ZMQChannelsWebsocketConnection):
    """Jupyter's kernel websocket connection, with its socket sending each message at once.

    The socket is switched as the browser connects, before the kernel's first message.

    Parameters
    ----------
    **kwargs
        What Jupyter's server gives every kernel websocket connection (its handler, the
        kernel's id and manager...), passed on unchanged.
    """

    def connect(self) -> Any:
        """Connect the browser to the kernel, its websocket sending at once (:func:`send_at_once`).

        Returns
        -------
        asyncio.Future or None
            What :meth:`ZMQChannelsWebsocketConnection.connect` returns: a future done once
            the kernel answers, or None when the connection failed.
        """
        send_at_once(self.websocket_handler)
        return super().connect()
