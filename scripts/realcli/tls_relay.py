#!/usr/bin/env python3
"""HTTPS in front of a plain-HTTP server on loopback: the e2e suite's fake model, served to the
credential proxy over TLS with a certificate of its own CA (moot-broker --upstream-ca).

    tls_relay.py CERT KEY PORT    prints https://127.0.0.1:<its port> once it listens
"""
import socket
import ssl
import sys
import threading


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client, context, port):
    try:
        tls = context.wrap_socket(client, server_side=True)
        plain = socket.create_connection(("127.0.0.1", port))
    except OSError:
        client.close()
        return
    threading.Thread(target=pipe, args=(tls, plain), daemon=True).start()
    pipe(plain, tls)


def main():
    cert, key, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print("https://127.0.0.1:%d" % listener.getsockname()[1], flush=True)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve, args=(client, context, port), daemon=True).start()


if __name__ == "__main__":
    main()
