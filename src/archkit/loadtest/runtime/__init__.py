"""The load generator's runtime, wired to a plan by a generated locustfile (it imports locust and gevent).

Only a load-generator process imports this package (`archkit.loadtest.worker`, or `locust -f`
on a generated file): gevent must patch the interpreter before `ssl` is imported (design
principle D4, docs/sources.md). `core.Runtime` holds the mix, levels and pacer; `protocols` the
user class per protocol; `pacing` the closed and open pacers; `mix` the typed scenarios and
`llm` the bodies drawn from an llm stage's workload (these two import no locust: tested in
the test process).
"""
