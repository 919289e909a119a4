"""`GET /metrics` in Prometheus text format (prometheus-client).

Engine figures are read at scrape time from the engine's counters and a snapshot of its
queues and KV pool, so nothing on the forward path pays for metrics. Each server has its
own registry (tests run several in one process).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.http_requests = Counter(
            "exactserve_http_requests",
            "HTTP requests answered, by route and status",
            ["route", "status"],
            registry=self.registry,
        )

    def watch(self, engine_getter: Callable[[], object]) -> None:
        """Report the engine `engine_getter()` returns (None while loading)."""
        self.registry.register(_EngineCollector(engine_getter))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _EngineCollector(Collector):
    def __init__(self, engine_getter: Callable[[], object]) -> None:
        self.engine_getter = engine_getter

    def collect(self) -> Iterator[Metric]:
        engine = self.engine_getter()
        if engine is None:
            return
        c, s = engine.counters, engine.snapshot()
        counters = (
            ("exactserve_requests", "generation requests admitted", c.requests),
            ("exactserve_prompt_tokens", "prompt tokens of admitted requests", c.prompt_tokens),
            ("exactserve_generated_tokens", "tokens generated", c.generated_tokens),
            ("exactserve_forward_passes", "engine steps (forward passes)", c.steps),
            ("exactserve_requests_cancelled", "requests ended by the client or shutdown",
             c.cancelled),
            ("exactserve_speculative_draft_tokens", "speculative guesses verified",
             c.draft_tokens),
            ("exactserve_speculative_accepted_tokens", "speculative guesses accepted",
             c.accepted_draft_tokens),
            ("exactserve_failed_forward_passes", "forward passes that raised", c.failed_passes),
            ("exactserve_prefix_cache_hit_tokens", "prompt tokens taken from the prefix cache",
             c.cached_tokens),
        )  # fmt: skip
        gauges = (
            ("exactserve_requests_waiting", "requests queued for a slot", s.waiting),
            ("exactserve_requests_running", "requests being generated", s.running),
            ("exactserve_kv_blocks_total", "KV cache blocks in the pool", s.kv_blocks_total),
            ("exactserve_kv_blocks_free", "KV cache blocks free", s.kv_blocks_free),
            ("exactserve_kv_blocks_used", "KV cache blocks held by requests", s.kv_blocks_used),
            ("exactserve_kv_blocks_cached", "KV cache blocks held only by the prefix cache",
             s.kv_blocks_cached),
        )  # fmt: skip
        for kind, rows in ((CounterMetricFamily, counters), (GaugeMetricFamily, gauges)):
            for name, help_text, value in rows:
                family = kind(name, help_text)
                family.add_metric([], value)
                yield family
