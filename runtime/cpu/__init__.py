"""The CPU engine's compiled group loop (contract 5.2 on int8 weights), chosen at run time.

build.py compiles group_loop.c and proves each instruction-set variant by running it;
matmul.py packs weights and launches it. The NumPy reference stays the fallback and the
oracle: every variant reproduces its bits.
"""
