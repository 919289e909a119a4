"""Speed of the tool-error rules: microseconds per 4 KB tool message, paper and wide.

    python bench/toolerr_speed.py [--rounds N]

Messages are the corpus's real tool results (tests/toolerr/corpus), each repeated and cut
to exactly 4,096 characters, run through `detect` as one tool message. Prints the CPU
model and its SIMD flags (the numbers depend on the machine). Issue 10's budget for the
wide rules: under 50 microseconds per 4 KB message. Results the wide rules call failures
are timed apart from the rest: classifying costs more than ruling a result out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from machine import cpu_info, listed_flags  # bench/ is this script's folder

from exactserve.toolerr.detect import RULES, detect
from exactserve.toolerr.messages import Message

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "toolerr" / "corpus"
SIZE = 4096
FLAGS = ("sse4_2", "avx", "avx2", "avx512f", "avx512_vnni", "amx_tile")


def messages() -> list[tuple[Message, ...]]:
    out = []
    for split in ("dev", "test", "test2"):
        for line in (CORPUS / f"{split}.jsonl").read_text("utf-8").splitlines():
            record = json.loads(line)
            text = record["text"] or " "
            text = (text * (SIZE // len(text) + 1))[:SIZE]
            message = Message("tool", text, tool_call_id="c", is_error=record["is_error"])
            out.append((message,))
    return out


def cpu() -> str:
    return f"{cpu_info()[0]}; flags: {listed_flags(FLAGS)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    batch = messages()
    print(f"CPU: {cpu()}")
    print(f"{len(batch)} messages of {SIZE} characters, best and median of {args.rounds} rounds")
    failed = [c for c in batch if detect(c, "", "wide")]
    passed = [c for c in batch if not detect(c, "", "wide")]
    for rules in RULES:
        for name, group in (("all", batch), ("failures", failed), ("successes", passed)):
            per_message = []
            for _ in range(args.rounds):
                start = time.perf_counter()
                for conversation in group:
                    detect(conversation, "", rules)
                per_message.append((time.perf_counter() - start) / len(group) * 1e6)
            print(
                f"{rules:>6} {name:>9} ({len(group):3d}): best {min(per_message):6.1f} us, "
                f"median {statistics.median(per_message):6.1f} us per message"
            )


if __name__ == "__main__":
    main()
