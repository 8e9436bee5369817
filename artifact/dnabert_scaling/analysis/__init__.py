"""From traces to metrics: step/phase attribution, the GPU-time partition, scaling figures."""
