"""A TCP forwarder for tests: listens on 127.0.0.1 (a free port, printed on the first line of stdout) and forwards
every connection to the target host:port, appending every byte it carries, both ways, to CAPTURE_FILE when one is
given.

It can also lose answers: after SIGUSR1 the bytes coming back from the target are dropped (the client hears
nothing, as when an answer is lost); after SIGUSR2 they are forwarded again. Each switch prints a line once in
effect, `dropping` or `forwarding`. With TCP_TAP_BOTH_WAYS=1 in its environment it drops the bytes going to the
target too (a cut link: nothing gets through either way). A connection the target refuses is closed, so the client
reconnects.

Usage: python3 tcp_tap.py TARGET_HOST TARGET_PORT [CAPTURE_FILE]
"""
import os
import signal
import socket
import sys
import threading

target = (sys.argv[1], int(sys.argv[2]))
capture = open(sys.argv[3], "ab", buffering=0) if len(sys.argv) > 3 else None
lock = threading.Lock()
dropping = threading.Event()
both_ways = os.environ.get("TCP_TAP_BOTH_WAYS") == "1"


def switch(drop):
    if drop:
        dropping.set()
    else:
        dropping.clear()
    print("dropping" if drop else "forwarding", flush=True)


signal.signal(signal.SIGUSR1, lambda *_: switch(True))
signal.signal(signal.SIGUSR2, lambda *_: switch(False))
# A test runner's threads may block these signals, and a child inherits the mask.
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1, signal.SIGUSR2])


def pump(source, destination, answers):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            if (answers or both_ways) and dropping.is_set():
                continue
            if capture:
                with lock:
                    capture.write(data)
            destination.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, destination):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client):
    try:
        upstream = socket.create_connection(target)
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(client, upstream, False), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client, True), daemon=True).start()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print(listener.getsockname()[1], flush=True)
while True:
    client, _ = listener.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
