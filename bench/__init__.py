"""The benchmark harness: ontoflow's throughput and latency, and the floor to read them against.

``bench.floor`` measures plain pyzmq + msgspec between two processes (no ontoflow code).
"""
