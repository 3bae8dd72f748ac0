"""A TCP forwarder for tests: listens on 127.0.0.1 (a free port, printed on the first line of stdout), forwards
every connection to the target host:port, and appends every byte it carries, both ways, to a capture file.

Usage: python3 tcp_tap.py TARGET_HOST TARGET_PORT CAPTURE_FILE
"""
import socket
import sys
import threading

target = (sys.argv[1], int(sys.argv[2]))
capture = open(sys.argv[3], "ab", buffering=0)
lock = threading.Lock()


def pump(source, destination):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
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


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print(listener.getsockname()[1], flush=True)
while True:
    client, _ = listener.accept()
    upstream = socket.create_connection(target)
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
