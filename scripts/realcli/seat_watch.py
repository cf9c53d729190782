#!/usr/bin/env python3
"""Watches every process below moot-broker (moot-run, moot-sandbox, the CLI and what it starts)
until STOP exists, and searches its /proc environ and cmdline for the provider's key.

Only moot-broker holds the key (undumpable), and each child it forks until that child's exec,
which still is moot-broker. Everything below gets the job token in its place: moot-run and
moot-sandbox too, since each is dumpable from its exec until its main runs, and each child
moot-run forks shows moot-run's environment, under moot-run's name, until its own exec. So the
watch starts at moot-run itself, not at its children, and polls often enough to catch such a
window now and then (a deterministic test is moot-broker's, bins/moot-broker/tests/forward.rs).

    seat_watch.py KEYFILE STOP    prints "inspected N" (processes seen) and a FOUND line for
                                  every process whose environ or cmdline held the key
"""
import os
import sys
import time


def processes():
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/comm" % entry) as f:
                table[int(entry)] = (int(fields[1]), f.read().strip())
        except (OSError, IndexError, ValueError):
            pass
    return table


def seat(table):
    inside = set()
    grew = True
    while grew:
        grew = False
        for pid, (ppid, comm) in table.items():
            parent = table.get(ppid)
            if pid not in inside and comm != "moot-broker" and (
                ppid in inside or (parent and parent[1] == "moot-broker")
            ):
                inside.add(pid)
                grew = True
    return inside


def main():
    key = open(sys.argv[1], "rb").read().strip()
    stop = sys.argv[2]
    inspected, found = set(), []
    while not os.path.exists(stop):
        table = processes()
        for pid in seat(table):
            for what in ("environ", "cmdline"):
                try:
                    with open("/proc/%d/%s" % (pid, what), "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                inspected.add(pid)
                if key in data:
                    found.append("FOUND %d %s %s" % (pid, table[pid][1], what))
        time.sleep(0.005)
    print("inspected %d" % len(inspected))
    for line in sorted(set(found)):
        print(line)


if __name__ == "__main__":
    main()
