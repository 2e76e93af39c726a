"""The shared counting server counts what reaches it, so a test's ``hits == 0`` means no request arrived."""

import urllib.request

from counting_server import counting_server


def test_the_counting_server_counts_each_request_and_reset_clears_it():
    with counting_server() as srv:
        assert srv.hits == 0
        for method in ("GET", "POST"):
            req = urllib.request.Request(f"http://127.0.0.1:{srv.port}/x", data=b"" if method == "POST" else None,
                                         method=method)
            with urllib.request.urlopen(req, timeout=5) as resp:
                assert resp.status == 200
        assert srv.hits == 2
        srv.reset()
        assert srv.hits == 0
