#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target (tests/fuzz/corpus/<target>/).

Each seed is a small valid (or nearly valid) input in the layout its target reads: the
script bytes the target takes from the front (tests/fuzz/*_fuzz.cc say which), then the
bytes the code under test receives. The TLS seeds are real ClientHellos, made with
Python's ssl module over memory BIOs. Run from the workspace root; rewrites the files.
"""

import os
import ssl
import struct

ROOT = os.path.join("tests", "fuzz", "corpus")


def chunks(*sizes):
    """The read-size script (FuzzInput::ReadSizes): a count, then one byte per size (b -> b + 1)."""
    return bytes([len(sizes)] + [s - 1 for s in sizes])


def write(target, name, data):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def buffered_stream():
    # read buffer size - 1, chunks, call count, (kind, param) per call, data.
    # kinds: 0 ReadUntil (delimiter param % 4, max param / 4), 1 ReadLine(max), 2 ReadExactly,
    # 3 ReadSome.
    calls = [(1, 20), (1, 20), (2, 5), (0, 4 * 10 + 1), (3, 7), (0, 4 * 10 + 3), (1, 3)]
    script = bytes([7]) + chunks(1, 3, 2) + bytes([len(calls)])
    script += b"".join(bytes(c) for c in calls)
    write("buffered_stream", "lines", script + b"first\nsecond\r\nexact--sep\r\nsome bytesENDtoolongline\n")
    write("buffered_stream", "unterminated", bytes([0]) + chunks(1) + bytes([2, 1, 5, 1, 5]) + b"abc")


def kv_server():
    # chunks, max_line - 1, max_value, data.
    session = b"SET a 3\r\nabc\r\nGET a\nDEL a\nGET a\nDEL a\nNOPE\nQUIT\n"
    write("kv_server", "session", chunks(5, 1, 17) + bytes([63, 100]) + session)
    write("kv_server", "bad_value", chunks() + bytes([63, 4]) + b"SET k 9\n123456789\n")
    write("kv_server", "long_line", chunks(2) + bytes([7, 10]) + b"GET aaaaaaaaaaaaaaaa\n")
    write("kv_server", "value_without_end", chunks() + bytes([30, 10]) + b"SET k 2\nabXGET k\n")


def savegame():
    def frame(body):
        return struct.pack("<I", len(body)) + body

    save_request = frame(struct.pack("<BQI", 1, 42, 7))
    save_reply = frame(struct.pack("<QB", 42, 0))
    store_put = frame(struct.pack("<BIQ", 2, 7, 3) + struct.pack("<QQ", 4, 42) + b"payload")
    store_response = frame(struct.pack("<BQ", 0, 4) + struct.pack("<QQ", 4, 42))
    write("savegame_protocol", "messages",
          chunks(3, 9, 1) + save_request + save_reply + store_put + store_response)
    write("savegame_protocol", "oversized", chunks() + save_request + struct.pack("<I", (1 << 20) + 1))
    write("savegame_protocol", "partial", chunks(2) + save_reply + b"\x10\x00\x00\x00abc")


def echo_server():
    def frame(body):
        return struct.pack("<I", len(body)) + body

    # protocol byte (0 mod 8: plain), max frame byte, plain buffer - 1, chunks, data.
    frames = frame(b"hello") + frame(b"") + frame(b"x" * 40)
    write("echo_server", "frames", bytes([1, 64, 15]) + chunks(3, 2, 30) + frames + b"\x05\x00")
    write("echo_server", "oversized", bytes([1, 8, 15]) + chunks() + frame(b"ok") + frame(b"y" * 9))
    write("echo_server", "large", bytes([1, 203, 15]) + chunks(250) + frame(b"z" * 3500))
    write("echo_server", "plain", bytes([0, 0, 4]) + chunks(3) + b"plain bytes echoed back")


def client_hello(**options):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if "maximum" in options:
        context.maximum_version = options["maximum"]
    if "alpn" in options:
        context.set_alpn_protocols(options["alpn"])
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    session = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        session.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def tls_handshake():
    write("tls_handshake", "hello_tls13_alpn", chunks() + client_hello(alpn=["fuzz/1"]))
    write("tls_handshake", "hello_tls12", chunks(5, 100) + client_hello(maximum=ssl.TLSVersion.TLSv1_2))
    write("tls_handshake", "hello_wrong_alpn", chunks(1) + client_hello(alpn=["h2"]))
    write("tls_handshake", "http", chunks() + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")


def socket_address():
    for name, text in [("v4", b"127.0.0.1:8080"), ("v6", b"[::1]:443"), ("any", b"0.0.0.0:0"),
                       ("v6_long", b"[2001:db8::ff00:42:8329]:65535"),
                       ("v4_mapped", b"[::ffff:10.0.0.1]:1"), ("bad_port", b"1.2.3.4:65536")]:
        write("socket_address", name, text)


if __name__ == "__main__":
    buffered_stream()
    kv_server()
    savegame()
    echo_server()
    tls_handshake()
    socket_address()
