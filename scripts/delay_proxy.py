"""A TCP proxy on 127.0.0.1 that delays every chunk it relays, in both directions, by a
fixed time: a store on loopback made to answer like one across a network (the load
test puts it between the gateway and Redis with ``--store-delay-ms``).

    python scripts/delay_proxy.py --listen PORT --target PORT --delay-ms 5

Order is kept per direction: each chunk leaves ``delay`` after it arrived, so a round
trip costs twice the delay, however many requests a connection pipelines.
"""

from __future__ import annotations

import argparse
import asyncio
import time


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, chunk = await queue.get()
            if not chunk:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    try:
        while chunk := await reader.read(65536):
            queue.put_nowait((time.monotonic() + delay, chunk))
    except ConnectionError:
        pass
    queue.put_nowait((0.0, b""))
    await sender


async def _serve(listen: int, target: int, delay: float) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, server_w, delay), _pipe(server_r, client_w, delay),
                             return_exceptions=True)

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--target", type=int, required=True)
    p.add_argument("--delay-ms", type=float, required=True)
    args = p.parse_args()
    asyncio.run(_serve(args.listen, args.target, args.delay_ms / 1000))


if __name__ == "__main__":
    main()
