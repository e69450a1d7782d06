"""The peers: the same workloads on LangGraph, Burr, Ray and Celery (``make bench-peers``).

These modules run in ``bench/.venv-peers`` (the peers are not ontoflow's dependencies) and
import no ontoflow code: only ``bench._stats``, ``bench.record``, ``bench.report`` and the floor.
"""
