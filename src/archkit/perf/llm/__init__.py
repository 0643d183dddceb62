"""LLM serving: the analytic replica model (`model`) and the continuous-batching simulation (`sim`).

`model.replica(llm, device)` resolves a spec's `llm` section into a `Replica` (KV bytes per token,
KV capacity in blocks, concurrency and what binds, prefill and decode step times, the roofline
crossover, speculative decoding, tensor-parallel all-reduce); `sim.simulate(replica, requests)`
runs a vLLM-style iteration-level scheduler over per-request arrivals and lengths.
"""
