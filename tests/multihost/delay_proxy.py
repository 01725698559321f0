#!/usr/bin/env python3
"""A TCP proxy that delays every byte by a fixed time in each direction.

This kernel has no netem qdisc, so link delay is made in user space: a
task's TF_CONFIG names the proxy's address instead of the peer's, and the
proxy forwards each connection to the peer, holding every chunk it reads for
--delay-ms before writing it on (bytes keep their order; the delay is added
once per direction, so a round trip gains twice the delay).

Usage: delay_proxy.py --delay-ms 50 LISTEN_HOST:PORT=TARGET_HOST:PORT [...]
Prints "ready" once every listener is bound. Standard library only.
"""

import argparse
import asyncio
import collections
import sys
import time


async def pump(reader, writer, delay):
    """Copies reader to writer, each chunk no earlier than `delay` s after
    it was read. A reader task and a writer task share a queue so that
    reading never waits for the delay of earlier chunks."""
    queue = collections.deque()
    ready = asyncio.Event()
    done = False

    async def read():
        nonlocal done
        try:
            while True:
                chunk = await reader.read(1 << 16)
                if not chunk:
                    break
                queue.append((time.monotonic() + delay, chunk))
                ready.set()
        except (ConnectionError, OSError):
            pass
        done = True
        ready.set()

    reading = asyncio.ensure_future(read())
    try:
        while True:
            if not queue:
                if done:
                    break
                ready.clear()
                await ready.wait()
                continue
            due, chunk = queue[0]
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            queue.popleft()
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        reading.cancel()
        try:
            writer.close()
        except OSError:
            pass


def serve(target, delay):
    host, port = target.rsplit(":", 1)

    async def on_connect(client_reader, client_writer):
        try:
            peer_reader, peer_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, peer_writer, delay),
                             pump(peer_reader, client_writer, delay))

    return on_connect


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("routes", nargs="+", help="LISTEN_HOST:PORT=TARGET_HOST:PORT")
    args = parser.parse_args()
    if not 0 <= args.delay_ms <= 10000:
        sys.exit(f"--delay-ms {args.delay_ms} is out of range; use 0 to 10000")
    servers = []
    for route in args.routes:
        listen, _, target = route.partition("=")
        if not target:
            sys.exit(f"route '{route}' is not LISTEN_HOST:PORT=TARGET_HOST:PORT")
        host, port = listen.rsplit(":", 1)
        servers.append(await asyncio.start_server(serve(target, args.delay_ms / 1000.0), host,
                                                  int(port)))
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main())
