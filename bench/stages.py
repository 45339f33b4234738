#!/usr/bin/env python3
"""Where a fan-out's delivery delay goes, stage by stage.

usage: bench/stages.py RECEIPTS TRACE0 [TRACE1 ...]

RECEIPTS is `memo-bench fanout --receipts` (revision server sent p50 last); TRACEn is the stage trace
(MEMO_STAGE_TRACE) of the n-th server given to memo-bench, the writer's first. Every time is CLOCK_MONOTONIC
nanoseconds on one machine. Prints, for each server, each stage's delay after the bench client sent the create:
p50 and p99 over the changes, in milliseconds; then the median and last subscriber's receipt after the writer's
commit (the delivery delay without the commit's own time). A stage with one entry per loop (fanout, written) counts its
last loop.
"""
import sys
from collections import defaultdict

ORDER = ["committed", "notified", "woken", "carried", "read", "applied", "fanout", "written"]


def load_trace(path):
    stages = defaultdict(dict)  # stage -> revision -> nanos (the last loop's for per-loop stages)
    woken = []
    with open(path) as file:
        for line in file:
            revision, stage, nanos = line.split()
            revision, nanos = int(revision), int(nanos)
            if stage == "woken":
                woken.append((nanos, revision))
                continue
            table = stages[stage]
            if stage in ("fanout", "written"):
                table[revision] = max(table.get(revision, 0), nanos)
            else:
                table.setdefault(revision, nanos)
    woken.sort()
    return stages, woken


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))] if values else float("nan")


def main():
    receipts_path, trace_paths = sys.argv[1], sys.argv[2:]
    traces = [load_trace(path) for path in trace_paths]
    receipts = defaultdict(dict)  # server -> revision -> (sent, p50, last)
    with open(receipts_path) as file:
        for line in file:
            revision, server, sent, p50, last = map(int, line.split())
            receipts[server][revision] = (sent, p50, last)
    writer_stages = traces[0][0]
    for server in sorted(receipts):
        stages, woken = traces[server]
        delays = defaultdict(list)
        for revision, (sent, p50, last) in receipts[server].items():
            committed = writer_stages["committed"].get(revision)
            row = {"committed": committed, "notified": None, "woken": None}
            if server != 0:
                # The notification that announced it: the first one sent for a head at or after it.
                row["notified"] = min(
                    (t for r, t in writer_stages["notified"].items() if r >= revision and committed and t >= committed),
                    default=None)
                row["woken"] = next(
                    (t for t, r in woken if r >= revision and committed and t >= committed), None)
            for stage in ("carried", "read", "applied", "fanout", "written"):
                row[stage] = stages[stage].get(revision)
            row["received (median subscriber)"] = p50
            row["received (last subscriber)"] = last
            for stage, nanos in row.items():
                if nanos is not None:
                    delays[stage].append((nanos - sent) / 1e6)
            if committed is not None:
                # The delivery delay proper: from the moment the write was committed, not sent.
                delays["after commit: median subscriber"].append((p50 - committed) / 1e6)
                delays["after commit: last subscriber"].append((last - committed) / 1e6)
        label = "the writer's server" if server == 0 else f"server {server} (cross-server)"
        print(f"{label}: {len(receipts[server])} changes; ms after the client sent the create, p50 / p99")
        for stage in ORDER + ["received (median subscriber)", "received (last subscriber)",
                              "after commit: median subscriber", "after commit: last subscriber"]:
            values = delays.get(stage)
            if values:
                print(f"  {stage:30s} {percentile(values, 0.5):9.2f} {percentile(values, 0.99):9.2f}"
                      f"   ({len(values)} changes)")


if __name__ == "__main__":
    main()
