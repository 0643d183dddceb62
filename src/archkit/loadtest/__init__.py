"""Load tests from the spec: a locust runner in its own process, exact percentiles, the budget judge, reports.

Nothing here imports locust or gevent at module level except `worker`, which runs in its own
process (gevent must patch the interpreter before `ssl` is imported; design principle D4 in docs/sources.md).
"""
