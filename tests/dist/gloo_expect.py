#!/usr/bin/env python3
"""What a recorded gloo_job.py run must give, from the ranks' own logs
(OUT/rankR.json: the CLOCK_MONOTONIC time each rank called each
collective), computed without InferScope:

    gloo_expect.py OUT

prints one line per fact, "name value":

    ranks N                 the ranks that wrote a log
    pid.R P                 rank R's process id
    count.OP N              collectives of OP (barrier, all_reduce, all_gather)
    skew_mean.OP NS         mean over OP's collectives of the latest arrival
                            minus the earliest (ns)
    wait.R NS               rank R's total wait: over every collective, the
                            latest arrival of any rank minus its own
    step_wait0 NS           rank 0's median wait per step in all_reduce
    own_work NS             the largest over ranks of a rank's median time
                            from leaving one step's all_gather to calling
                            the next all_reduce, less slow_preprocess (its
                            own work per step: an MLP forward)
    slow NS                 median measured duration of slow_preprocess (0
                            when none ran)
    step NS                 rank 0's median time between its all_reduce calls
    late_max NS             the largest, over ranks and operations, of a
                            rank's median lateness in an operation's
                            collectives (its arrival minus the median of the
                            other ranks'): how far the job is from balanced
    late_rank R             the rank that is
"""
import json
import os
import statistics
import sys


def main(out):
    logs = {}
    for name in os.listdir(out):
        if name.startswith("rank") and name.endswith(".json"):
            with open(os.path.join(out, name)) as f:
                d = json.load(f)
            logs[d["rank"]] = d
    ranks = sorted(logs)
    print("ranks", len(ranks))
    for r in ranks:
        print("pid.%d" % r, logs[r]["pid"])
    n = min(len(logs[r]["arrivals"]) for r in ranks)
    skews, waits = {}, {r: 0 for r in ranks}
    for k in range(n):
        op = logs[ranks[0]]["arrivals"][k][0]
        t = {r: logs[r]["arrivals"][k][1] for r in ranks}
        latest = max(t.values())
        skews.setdefault(op, []).append(latest - min(t.values()))
        for r in ranks:
            waits[r] += latest - t[r]
    for op in sorted(skews):
        print("count.%s" % op, len(skews[op]))
        print("skew_mean.%s" % op, round(statistics.mean(skews[op])))
    for r in ranks:
        print("wait.%d" % r, waits[r])
    a0 = [t for op, t in logs[0]["arrivals"] if op == "all_reduce"]
    step = [max(logs[r]["arrivals"][k][1] for r in ranks) - logs[0]["arrivals"][k][1]
            for k in range(n) if logs[0]["arrivals"][k][0] == "all_reduce"]
    print("step_wait0", round(statistics.median(step)))
    own_max = 0
    for r in ranks:  # from leaving a step's all_gather to calling the next all_reduce, less slow_preprocess
        ar = [t for op, t in logs[r]["arrivals"] if op == "all_reduce"]
        sl = logs[r]["slow_ns"]
        own = [a - l - (sl[i + 1] if i + 1 < len(sl) else 0) for i, (l, a) in enumerate(zip(logs[r]["left"], ar[1:]))]
        if own:
            own_max = max(own_max, round(statistics.median(own)))
    print("own_work", own_max)
    slow = [s for r in ranks for s in logs[r]["slow_ns"]]
    print("slow", round(statistics.median(slow)) if slow else 0)
    print("step", round(statistics.median([b - a for a, b in zip(a0, a0[1:])])))
    late = {}
    for k in range(n):
        op = logs[ranks[0]]["arrivals"][k][0]
        for r in ranks:
            others = [logs[q]["arrivals"][k][1] for q in ranks if q != r]
            late.setdefault((r, op), []).append(logs[r]["arrivals"][k][1] - statistics.median(others))
    worst = max((statistics.median(v), r) for (r, op), v in late.items() if len(v) >= 3)
    print("late_max", round(worst[0]))
    print("late_rank", worst[1])
    # how much later rank 0 left each step's all_gather than rank 1, on the one clock they share (the
    # median): the alignment's premise is that ranks leave a collective together
    if 0 in logs and 1 in logs:
        print("exit_skew_01", round(statistics.median(a - b for a, b in zip(logs[0]["left"], logs[1]["left"]))))


if __name__ == "__main__":
    main(sys.argv[1])
