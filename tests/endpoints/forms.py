"""The 21 URL forms of issue 28's campaign: 15 that name 10.0.0.1 (or a name) and must be refused,
5 spellings of loopback that must reach 127.0.0.1, and a loopback server's redirect off loopback.

`{port}` is the loopback stand-in server's port.
"""

from __future__ import annotations

FORBIDDEN = "10.0.0.1"

REFUSED = [
    "http://10.0.0.1:8000",
    "HTTP://10.0.0.1:8000",
    "http://[::ffff:10.0.0.1]:8000",
    "http://[::ffff:a00:1]:8000",
    "http://[0:0:0:0:0:ffff:10.0.0.1]:8000",
    "http://167772161:8000",
    "http://012.0.0.1:8000",
    "http://0x0a000001:8000",
    "http://0xa.0.0.1:8000",
    "http://10.1:8000",
    "http://10.0.0.1.:8000",
    "http://10.0.0.1#@127.0.0.1:{port}",
    "http://127.0.0.1@10.0.0.1:8000",
    "http://10.0.0.1:8000\\@127.0.0.1:{port}",
    "http://remote.test:8000",  # a name: refused without a lookup when no allow-list is given
]
LOOPBACK = [
    "http://127.0.0.1.:{port}",  # a trailing dot: an address, not a name to look up
    "http://0x7f000001:{port}",
    "http://127.1:{port}",
    "http://[::ffff:127.0.0.1]:{port}",
    "http://localhost:{port}",
]
REDIRECT = "http://127.0.0.1:{port}/redirect"  # the stand-in answers 302 to http://10.0.0.1:8000/
FORMS = REFUSED + LOOPBACK + [REDIRECT]
assert len(FORMS) == 21
