#!/usr/bin/env python3
"""attribute.py INDEX PERF_DATA [--by method|line|stack] [--top N] [--depth D]

Attributes the samples in PERF_DATA (perf record of a JVM run with the jitlog agent) to the JIT-compiled code
that jitlog's INDEX describes: per compiled method, then per source method (or line, or inlining stack) of the
innermost io.jrdma frame at the sample's PC. A sample is placed at the first PC the JIT described at or after it
(its debug information covers the instructions up to that PC); code compiled again at an address takes the latest
description. Samples outside JIT-compiled code (the interpreter, the JVM, libc, the kernel) are counted apart.
"""
import argparse, bisect, collections, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument('index'); ap.add_argument('data')
ap.add_argument('--by', default='method', choices=['method', 'line', 'stack'])
ap.add_argument('--top', type=int, default=30)
ap.add_argument('--depth', type=int, default=3)
ap.add_argument('--prefix', default='io/jrdma', help='frames of this package prefix name the sample')
ap.add_argument('--all-threads', action='store_true', help='every thread\'s samples, not only the busiest thread\'s')
a = ap.parse_args()

blobs = []  # [start, size, name, pcs, pc_keys]
for ln in open(a.index):
    if ln.startswith('M '):
        _, addr, size, _, name = ln.split(' ', 4)
        blobs.append([int(addr, 16), int(size), name.strip(), [], None])
    elif ln.startswith('P ') and blobs:
        f = ln.split()
        blobs[-1][3].append((int(f[1], 16), f[2:]))
for b in blobs:
    b[3].sort()
    b[4] = [p[0] for p in b[3]]
pages = collections.defaultdict(list)
for i, b in enumerate(blobs):
    for p in range(b[0] >> 12, ((b[0] + b[1]) >> 12) + 1):
        pages[p].append(i)

def blob(ip):
    for i in reversed(pages.get(ip >> 12, ())):
        b = blobs[i]
        if b[0] <= ip < b[0] + b[1]:
            return b
    return None

def short(frame):  # Lio/jrdma/engine/shm/ShmTransport;.sendDirect@33:2400 -> ShmTransport.sendDirect@33:2400
    cls, _, rest = frame.partition(';.')
    return cls.rsplit('/', 1)[-1] + '.' + rest

out = subprocess.run(['perf', 'script', '-i', a.data, '-F', 'tid,ip'], capture_output=True, text=True, check=True).stdout
samples = [ln.split() for ln in out.splitlines() if ln.strip()]
tids = collections.Counter(t for t, _ in samples)
busiest = tids.most_common(1)[0][0] if tids else None
# the busiest thread (the measured loop's), unless asked for all: the JIT's compiler threads are busy at the start
ips = [int(ip, 16) for t, ip in samples if a.all_threads or t == busiest]
if not a.all_threads:
    print('thread %s: %d of %d samples' % (busiest, len(ips), len(samples)))
by_blob = collections.Counter(); by_key = collections.Counter(); outside = 0
for ip in ips:
    b = blob(ip)
    if b is None:
        outside += 1
        continue
    by_blob[short(b[2])] += 1
    k = bisect.bisect_left(b[4], ip)
    stack = b[3][k][1] if k < len(b[3]) else []
    if a.by == 'stack':
        key = ' < '.join(short(f) for f in stack[:a.depth]) or '(no description)'
    else:
        f = next((f for f in stack if f.startswith('L' + a.prefix)), None)
        if f is None:
            key = '(no ' + a.prefix + ' frame)'
        else:
            m = short(f).split('@')[0]
            key = m if a.by == 'method' else m + ':' + f.rsplit(':', 1)[-1]
    by_key[key] += 1
jit = len(ips) - outside
print('samples %d: JIT-compiled code %d, elsewhere %d' % (len(ips), jit, outside))
print('\nper compiled method (share of the JIT-compiled samples)')
for k, v in by_blob.most_common(a.top):
    print('%6.2f%%  %s' % (100.0 * v / max(jit, 1), k))
print('\nper %s (the innermost %s frame)' % (a.by, a.prefix))
for k, v in by_key.most_common(a.top):
    print('%6.2f%%  %s' % (100.0 * v / max(jit, 1), k))
