#!/usr/bin/env python3
"""Watches every process of the seat (what moot-run starts, and below) until STOP exists, and
searches its /proc environ and cmdline for the provider's key.

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
        for pid, (ppid, _) in table.items():
            parent = table.get(ppid)
            if pid not in inside and (ppid in inside or (parent and parent[1] == "moot-run")):
                # moot-sandbox before its exec is the harness, not yet the seat: it reads the
                # caller's environment to rewrite it, and the CLI it becomes has its own.
                if table[pid][1] == "moot-sandbox":
                    continue
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
        time.sleep(0.05)
    print("inspected %d" % len(inspected))
    for line in sorted(set(found)):
        print(line)


if __name__ == "__main__":
    main()
