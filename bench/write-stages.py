#!/usr/bin/env python3
"""Where a PostgreSQL-backed server's own write spends its time, step by step.

usage: bench/write-stages.py TRACE

TRACE is the stage trace (MEMO_STAGE_TRACE) of one memo-server over PostgreSQL that took the writes. For every
change the trace follows from its submission to its answer, prints each step's p50 and p90 in milliseconds:
  submitted -> sent       waiting for the writer (it was sending the batch before)
  sent -> returned        memo_write's round trip (the batch planned and committed, not yet flushed)
  returned -> claimed     waiting for the claimer (it was claiming the batches before)
  claimed -> committed    the claim's round trip (its flush, and the notification)
  committed -> applied    the hand-over to the feed and the apply to the server's table
  applied -> answered     until the answer is handed to the connection's loop
and the whole, submitted -> answered. What comes after (the loop's write, the client) is not in the trace.
"""
import sys
from collections import defaultdict

STEPS = ["submitted", "sent", "returned", "claimed", "committed", "applied", "answered"]


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))] if values else float("nan")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    stages = defaultdict(dict)  # stage -> revision -> nanos (the first entry)
    with open(sys.argv[1]) as file:
        for line in file:
            revision, stage, nanos = line.split()
            if stage in STEPS:
                stages[stage].setdefault(int(revision), int(nanos))
    revisions = [r for r in stages["submitted"] if all(r in stages[s] for s in STEPS)]
    if not revisions:
        sys.exit("no write in the trace went through every step (a server over PostgreSQL, MEMO_STAGE_TRACE set?)")
    print(f"{len(revisions)} writes, milliseconds (p50 / p90):")
    for before, after in list(zip(STEPS, STEPS[1:])) + [(STEPS[0], STEPS[-1])]:
        delays = [(stages[after][r] - stages[before][r]) / 1e6 for r in revisions]
        print(f"  {before + ' -> ' + after:26} {percentile(delays, 0.5):7.3f} / {percentile(delays, 0.9):7.3f}")


if __name__ == "__main__":
    main()
