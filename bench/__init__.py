"""Head-to-head benchmarks against llama.cpp. Each module also runs as a script
(`python bench/cpu_speed.py`); `python -m bench.report` runs them all into one report."""
