#!/usr/bin/env python3
# Where each microsecond of one receipt goes, from an execution trace of
# receiptd-bench -floor-profile (one client): docs/performance.md, "One
# receipt at the floor".
#
#   go run ./cmd/receiptd-bench -floor-profile /tmp/prof -accept-for 6s
#   go tool trace -d=parsed /tmp/prof/trace-receiptd.out | python3 cmd/receiptd-bench/phases.py
#
# It follows every goroutine that made a log fdatasync (the connections'
# goroutines; the naive server's own fdatasync counts as its log's) and sums,
# per receipt, the time they spent running before and after the fdatasync,
# runnable without a CPU, in each kind of syscall, and waiting inside a
# request; and how many log fdatasyncs overlapped one of the database's.
# Means per receipt: the trace's own overhead is in the running figures.
import re, sys, collections, statistics

tr = re.compile(r'^M=\S+ P=\S+ G=\S+ StateTransition Time=(\d+) GoID=(\d+) (\S+)->(\S+) Reason="([^"]*)"')
events, cur = [], None
for line in sys.stdin:
    m = tr.match(line)
    if m:
        cur = [int(m.group(1)), int(m.group(2)), m.group(3), m.group(4), m.group(5), []]
        events.append(cur)
    elif cur is not None and line.startswith('\t') and not line.startswith('\t\t'):
        cur[5].append(line.strip().split(' @ ')[0])
    elif not line.startswith('TransitionStack') and not line.startswith('\t'):
        cur = None

def kind(frames):
    s = ' '.join(frames)
    if 'Fdatasync' in s:
        return 'wal-fdatasync' if ('wal.datasync' in s or 'naiveServer' in s) else ('db-fdatasync' if 'bbolt' in s else 'other-fdatasync')
    if 'wal.(*Log).write' in s or 'naiveServer' in s: return 'wal-pwrite'
    if 'response).finishRequest' in s or 'bufio.(*Writer).Flush' in s: return 'answer-write'
    if 'syscall.read' in s or 'Read' in s: return 'read'
    return 'other-syscall'

per_g = collections.defaultdict(list)
for e in events:
    per_g[e[1]].append(e)
handlers = {g for g, es in per_g.items() if any(e[3] == 'Syscall' and kind(e[5]) == 'wal-fdatasync' for e in es)}
T = collections.Counter()
syncs, dbint, walint = [], [], []
for g, es in per_g.items():
    h = g in handlers
    state, since, after, sk, sstart = None, None, False, None, None
    for e in es:
        t, frm, to, reason, frames = e[0], e[2], e[3], e[4], e[5]
        if since is not None:
            d = t - since
            if h:
                if state == 'Running':
                    T['running, after the fdatasync: the answer' if after else 'running, before the log write: read, parse, check, encode, append'] += d
                elif state == 'Runnable':
                    T['runnable, waiting for a CPU (hand-offs, a busy machine)'] += d
                elif state == 'Syscall':
                    T[{'wal-fdatasync': 'syscall: the log fdatasync', 'wal-pwrite': 'syscall: the log pwrite',
                       'answer-write': 'syscall: write of the answer', 'read': 'syscall: read of the request'}.get(sk, 'syscall: other')] += d
                elif state == 'Waiting' and wreason != 'network':
                    T['waiting in the handler: ' + wreason] += d
            elif state == 'Running':
                T['(other goroutines running: apply, worker, GC, client)'] += d
        if to == 'Syscall':
            sk, sstart = kind(frames), t
        if frm == 'Syscall' and sstart is not None:
            (walint if sk == 'wal-fdatasync' else dbint if sk == 'db-fdatasync' else []).append((sstart, t))
            if sk == 'wal-fdatasync': after = True
            sstart = None
        if to == 'Waiting':
            wreason = reason
            if reason == 'network': after = False
        state, since = to, t
n = len(walint)
print(f"receipts (log fdatasyncs by connection goroutines): {n}")
for k, v in sorted(T.items(), key=lambda kv: -kv[1]):
    print(f"  {k:75s} {v/max(n,1)/1000:8.1f} µs")
print(f"  {'sum (without other goroutines)':75s} {sum(v for k,v in T.items() if not k.startswith('('))/max(n,1)/1000:8.1f} µs")
dur = [e - s for s, e in walint]
dbint.sort()
def ov(a, b): return any(s < b and e > a for s, e in dbint)
o = [e - s for s, e in walint if ov(s, e)]
print(f"log fdatasync: median {statistics.median(dur)/1000:.1f} µs, mean {statistics.mean(dur)/1000:.1f} µs; "
      f"{len(o)} ({100*len(o)/max(n,1):.1f}%) overlapped one of the database's {len(dbint)} fdatasyncs ({sum(e-s for s,e in dbint)/1e6:.0f} ms busy)")
