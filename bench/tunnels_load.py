#!/usr/bin/env python3
"""Idle WebSocket tunnels through a proxy, for bench/tunnels.sh (standard library only).

  tunnels_load.py backend PORT
      A WebSocket-ish backend on 127.0.0.1:PORT: answers an upgrade with 101, then echoes every
      byte (a raw tunnel, like a WebSocket echo). Runs until killed.

  tunnels_load.py clients PROXY_PORT N HOLD_FILE ACTIVE SECONDS
      Opens N upgraded connections through 127.0.0.1:PROXY_PORT (a bounded number at a time),
      prints "ready N" when all answered 101, waits until HOLD_FILE exists (the script measures
      memory meanwhile), then runs SECONDS of 32-byte ping-pongs on ACTIVE of the tunnels and
      prints "msgs M rate R" (round trips per second), then closes everything. Every wait is
      bounded; a tunnel that fails is counted and reported ("failed F").
"""
import asyncio
import os
import sys
import time

UPGRADE = (b"GET /_blazor HTTP/1.1\r\nHost: bench.local\r\nConnection: Upgrade\r\n"
           b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
# Sec-WebSocket-Accept of the fixed key above (RFC 6455 §1.3); HAProxy refuses a 101 without it.
SWITCH = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
          b"Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")


async def backend(port):
    async def handle(r, w):
        try:
            head = await r.readuntil(b"\r\n\r\n")
            if b"upgrade: websocket" not in head.lower():
                w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await w.drain()
                w.close()
                return
            w.write(SWITCH)
            await w.drain()
            while True:
                data = await r.read(65536)
                if not data:
                    break
                w.write(data)
                await w.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


async def open_tunnel(port, sem):
    async with sem:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
        w.write(UPGRADE)
        await w.drain()
        head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 10)
        if not head.startswith(b"HTTP/1.1 101"):
            w.close()
            raise RuntimeError(head[:40])
        return r, w


async def clients(port, n, hold_file, active, seconds):
    sem = asyncio.Semaphore(200)
    results = await asyncio.gather(*(open_tunnel(port, sem) for _ in range(n)),
                                   return_exceptions=True)
    tunnels = [t for t in results if not isinstance(t, BaseException)]
    failed = n - len(tunnels)
    print(f"ready {len(tunnels)} failed {failed}", flush=True)
    deadline = time.monotonic() + 600
    while not os.path.exists(hold_file) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    msg = b"x" * 32
    count = 0
    stop = time.monotonic() + seconds

    async def pingpong(r, w):
        nonlocal count
        while time.monotonic() < stop:
            w.write(msg)
            await w.drain()
            await asyncio.wait_for(r.readexactly(len(msg)), 10)
            count += 1

    t0 = time.monotonic()
    await asyncio.gather(*(pingpong(r, w) for r, w in tunnels[:active]), return_exceptions=True)
    took = time.monotonic() - t0
    print(f"msgs {count} rate {count / took:.0f}", flush=True)
    for _, w in tunnels:
        w.close()


def main():
    if sys.argv[1] == "backend":
        asyncio.run(backend(int(sys.argv[2])))
    elif sys.argv[1] == "clients":
        asyncio.run(clients(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
                            int(sys.argv[5]), float(sys.argv[6])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
