#!/usr/bin/env python3
"""Reference numbers for the Kineto importer tests, from Python's json module.

  kineto_ref.py counts FILE         categories counted the way the importer maps them
  kineto_ref.py gpu-ops FILE        one line per GPU op: ts_ns dur_ns correlation device stream,
                                    sorted; ts in ns from the earliest imported event,
                                    computed exactly from the decimal text
  kineto_ref.py dump-gpu DUMP       the same lines from `iscope-merge --dump-times` output
  kineto_ref.py dump-counts DUMP    counts of the same categories from a --dump
  kineto_ref.py chrome FILE         counts and correlations of a --format=chrome output
  kineto_ref.py check-order DUMP    --dump-times output: ordered, spans properly nested and closed
  kineto_ref.py joined FILE DUMP    GPU ops whose API call (same correlation) is present, in both
  kineto_ref.py gpu-mem-peak FILE   per CUDA device: "device peak" of the net bytes allocated
                                    ([memory] events with Device Type 1, in time order) since
                                    the trace began
  kineto_ref.py gpu-mem-sites FILE  per CUDA device: "device peak", then the live bytes by
                                    allocation site at the (first) peak, "bytes site" for
                                    the top 5: a release pairs with the latest live
                                    allocation of its size; the site of an allocation is
                                    the outermost CPU op (ProfilerStep#N is not one) whose
                                    [ts, ts + dur] holds it on its thread, else the
                                    innermost annotation holding it
  kineto_ref.py gpu-mem-totals FILE per CUDA device whose [memory] events carry the caching
                                    allocator's "Total Allocated" and "Total Reserved":
                                    "device max_allocated max_reserved allocated_end
                                    reserved_end" (the largest of each over the device's
                                    events, then the values of its last event in time
                                    order); "none" when no device has them

Only the standard library (gzip, json, decimal).
"""
import collections
import decimal
import gzip
import json
import sys

GPU = {'kernel': 'kernels', 'gpu_memcpy': 'memcpys', 'memcpy': 'memcpys', 'gpu_memset': 'memsets',
       'memset': 'memsets', 'cuda_sync': 'syncs'}
API = {'cuda_runtime': 'runtime', 'runtime': 'runtime', 'hip_runtime': 'runtime',
       'cuda_driver': 'driver', 'driver': 'driver', 'hip_driver': 'driver'}
SPAN = {'cpu_op': 'cpu_ops', 'operator': 'cpu_ops', 'python_function': 'python_functions',
        'python': 'python_functions', 'user_annotation': 'annotations'}


def load(path):
    opener = gzip.open if open(path, 'rb').read(2) == b'\x1f\x8b' else open
    with opener(path, 'rt', encoding='utf-8') as f:
        return json.load(f, parse_float=decimal.Decimal)


def cat(e):
    return (e.get('cat') or '').lower()


def record_function(name):
    """torch.profiler's own ranges, which legacy files file under Operator."""
    return (name.startswith('ProfilerStep#') or name.startswith('enumerate(DataLoader)')
            or (name.startswith('Optimizer.') and '#' in name))


def counts(path):
    c = collections.Counter()
    for e in load(path)['traceEvents']:
        ph, k = e.get('ph'), cat(e)
        if ph == 'X' and k in GPU:
            c['gpu_ops'] += 1
            c[GPU[k]] += 1
            if 'stream' in e.get('args', {}):
                c['gpu_ops_with_stream'] += 1
        elif ph == 'X' and k in API:
            c['api_calls'] += 1
            c[API[k]] += 1
        elif ph == 'X' and k in SPAN:
            kind = SPAN[k]
            if kind == 'cpu_ops' and record_function(e.get('name', '')):
                kind = 'annotations'
            c[kind] += 1
        elif ph == 'X' and k == 'gpu_user_annotation':
            c['gpu_annotations'] += 1
        elif ph in ('i', 'I') and e.get('name') == '[memory]':
            c['marks'] += 1
    keys = ['gpu_ops', 'kernels', 'memcpys', 'memsets', 'syncs', 'gpu_annotations', 'api_calls', 'runtime',
            'driver', 'cpu_ops', 'python_functions', 'annotations', 'marks']
    return {k: c[k] for k in keys}, c['gpu_ops_with_stream']


def ns(v):
    """µs (int or Decimal from the text) to ns, rounded half away from zero like the importer."""
    return int((decimal.Decimal(v) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def gpu_ops(path):
    evs = load(path)['traceEvents']
    imported = [e for e in evs if (e.get('ph') == 'X' and (cat(e) in GPU or cat(e) in API or cat(e) in SPAN
                                                         or cat(e) == 'gpu_user_annotation'))
                or (e.get('ph') in ('i', 'I') and e.get('name') == '[memory]')]
    t0 = min(ns(e['ts']) for e in imported)
    out = []
    for e in imported:
        if e['ph'] == 'X' and cat(e) in GPU:
            a = e.get('args', {})
            out.append('%d %d %d %d %d' % (ns(e['ts']) - t0, ns(e['dur']), a.get('correlation', 0),
                                           a.get('device', e['pid']) & 0xffffffff,
                                           a.get('stream', e['tid'] if isinstance(e['tid'], int) else 0) & 0xffffffff))
    return sorted(out)


def dump_gpu(path):
    out = []
    for line in open(path):
        f = line.split()
        if len(f) > 2 and f[1] == 'GPU' and f[4] != 'other':
            kv = dict(x.split('=', 1) for x in f if '=' in x and x.split('=', 1)[0] in ('corr', 'dur'))
            out.append('%s %s %s %s %s' % (f[0], kv['dur'], kv['corr'], f[2][3:], f[3][1:]))
    return sorted(out)


def dump_counts(path):
    c = collections.Counter()
    for line in open(path):
        f = line.split()
        while f and (f[0][0] in 'PT' and f[0][1:].isdigit() or f[0].isdigit()):
            f = f[1:]
        if not f:
            continue
        if f[0] == 'GPU':
            kind = {'kernel': 'kernels', 'memcpy': 'memcpys', 'memset': 'memsets', 'sync': 'syncs',
                    'other': 'gpu_annotations'}[f[3]]
            c[kind] += 1
            if kind != 'gpu_annotations':
                c['gpu_ops'] += 1
        elif f[0] == 'API':
            c['api_calls'] += 1
            c[f[1]] += 1
        elif f[0] == 'B':
            c[{'op': 'cpu_ops', 'python': 'python_functions', 'scope': 'annotations'}[f[1]]] += 1
        elif f[0] == 'M':
            c['marks'] += 1
    keys = ['gpu_ops', 'kernels', 'memcpys', 'memsets', 'syncs', 'gpu_annotations', 'api_calls', 'runtime',
            'driver', 'cpu_ops', 'python_functions', 'annotations', 'marks']
    return {k: c[k] for k in keys}


def chrome(path):
    with open(path) as f:
        d = json.load(f)
    assert d.get('displayTimeUnit') == 'ns'
    evs = d['traceEvents']
    gpu = [e for e in evs if e.get('ph') == 'X' and 'stream' in e.get('args', {})
           and e.get('cat') != 'gpu_user_annotation']
    corr = sorted(e['args'].get('correlation', 0) for e in gpu)
    names = {(e['pid'], e.get('tid')) for e in evs if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
    streams_named = all((e['pid'], e['tid']) in names for e in gpu)
    flows_s = sum(1 for e in evs if e.get('ph') == 's')
    flows_f = sum(1 for e in evs if e.get('ph') == 'f')
    return {'gpu_ops_with_stream': len(gpu), 'correlations': corr, 'streams_named': streams_named,
            'flow_starts': flows_s, 'flow_ends': flows_f,
            'spans': sum(1 for e in evs if e.get('ph') == 'X' and e.get('cat') in ('op', 'python', 'scope'))}


def joined(path):
    api, ops = set(), []
    for line in open(path):
        f = line.split()
        while f and (f[0][0] in 'PT' and f[0][1:].isdigit() or f[0].isdigit()):
            f = f[1:]
        kv = dict(x.split('=', 1) for x in f if x.startswith('corr='))
        if f and f[0] == 'API':
            api.add(kv['corr'])
        elif f and f[0] == 'GPU' and kv.get('corr', '0') != '0':
            ops.append(kv['corr'])
    return ops, api


def check_order(path):
    """--dump-times output: times never decrease; every E closes the innermost open span of its
    stack (calls: op and python; scopes) in its context; depths match; nothing left open."""
    last, stacks, errors, spans = -1, collections.defaultdict(list), [], 0
    for n, line in enumerate(open(path), 1):
        f = line.split()
        if not f or not f[0].isdigit():
            continue
        ts = int(f[0])
        if ts < last:
            errors.append('line %d: time goes back' % n)
        last = ts
        ctx = tuple(x for x in f[1:3] if x[0] in 'PT' and x[1:].isdigit())
        body = f[1 + len(ctx):]
        if body[0] in ('B', 'E'):
            st = stacks[ctx + ('scope' if body[1] == 'scope' else 'call',)]
            name = ' '.join(body[1:-1] if body[0] == 'B' else body[1:])
            if body[0] == 'B':
                spans += 1
                if body[-1] != 'd%d' % len(st):
                    errors.append('line %d: depth %s with %d open' % (n, body[-1], len(st)))
                st.append(name)
            elif not st or st.pop() != name:
                errors.append('line %d: end does not close the innermost span' % n)
    errors += ['%s: %d spans left open' % (k, len(v)) for k, v in stacks.items() if v]
    return spans, errors


def gpu_mem_sites(path):
    evs = load(path)['traceEvents']
    ops, notes = collections.defaultdict(list), collections.defaultdict(list)
    for e in evs:
        if e.get('ph') != 'X' or cat(e) not in SPAN:
            continue
        key = (e.get('pid', 0), str(e.get('tid', 0)))
        span = (ns(e['ts']), ns(e['ts']) + ns(e.get('dur', 0)), e['name'])
        if SPAN[cat(e)] == 'annotations' or record_function(e['name']):
            notes[key].append(span)
        elif SPAN[cat(e)] == 'cpu_ops':
            ops[key].append(span)
    mem = [(ns(e['ts']), i, e) for i, e in enumerate(evs)
           if e.get('ph') in ('i', 'I') and e.get('name') == '[memory]'
           and e.get('args', {}).get('Device Type') == 1 and e['args'].get('Device Id', -1) >= 0
           and e['args'].get('Bytes', 0) != 0]

    def site(e, t):
        key = (e.get('pid', 0), str(e.get('tid', 0)))
        holding = [s for s in ops[key] if s[0] <= t <= s[1]]
        if holding:  # outermost: earliest start, then longest
            return min(holding, key=lambda s: (s[0], -s[1]))[2]
        holding = [s for s in notes[key] if s[0] <= t <= s[1]]
        if holding:  # innermost: latest start, then shortest
            return max(holding, key=lambda s: (s[0], -s[1]))[2]
        return None

    live = collections.defaultdict(list)  # (device, size) -> stack of sites
    cur, peak, at_peak = collections.Counter(), collections.Counter(), {}
    by_site = collections.defaultdict(collections.Counter)
    for t, _, e in sorted(mem, key=lambda x: x[:2]):
        d, b = e['args']['Device Id'], e['args']['Bytes']
        if b > 0:
            s = site(e, t)
            live[(d, b)].append(s)
            by_site[d][s] += b
            cur[d] += b
        elif live[(d, -b)]:
            by_site[d][live[(d, -b)].pop()] += b
            cur[d] += b
        if cur[d] > peak[d]:
            peak[d] = cur[d]
            at_peak[d] = dict(by_site[d])
    for d in sorted(peak):
        print(d, peak[d])
        top = sorted(((v, k) for k, v in at_peak[d].items() if v > 0), key=lambda x: (-x[0], x[1] or ''))
        for v, k in top[:5]:
            print(v, k)


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == 'counts':
        c, _ = counts(path)
        print(' '.join('%s=%d' % kv for kv in c.items()))
    elif mode == 'gpu-ops':
        print('\n'.join(gpu_ops(path)))
    elif mode == 'dump-gpu':
        print('\n'.join(dump_gpu(path)))
    elif mode == 'dump-counts':
        print(' '.join('%s=%d' % kv for kv in dump_counts(path).items()))
    elif mode == 'stream-ops':
        _, n = counts(path)
        print(n)
    elif mode == 'stream-correlations':
        evs = load(path)['traceEvents']
        print(' '.join(str(c) for c in sorted(e['args'].get('correlation', 0) for e in evs
                                                 if e.get('ph') == 'X' and cat(e) in GPU
                                                 and 'stream' in e.get('args', {}))))
    elif mode == 'check-order':
        spans, errors = check_order(path)
        print('spans=%d errors=%d' % (spans, len(errors)))
        for e in errors[:10]:
            print(e)
    elif mode == 'chrome':
        c = chrome(path)
        print('gpu_ops_with_stream=%d streams_named=%d flow_starts=%d flow_ends=%d spans=%d'
              % (c['gpu_ops_with_stream'], c['streams_named'], c['flow_starts'], c['flow_ends'], c['spans']))
        print(' '.join(str(x) for x in c['correlations']))
    elif mode == 'joined':  # joined FILE DUMP
        evs = load(path)['traceEvents']
        src_api = {str(e['args']['correlation']) for e in evs
                   if e.get('ph') == 'X' and cat(e) in API and 'correlation' in e.get('args', {})}
        src_ops = [str(e['args']['correlation']) for e in evs
                   if e.get('ph') == 'X' and cat(e) in GPU and e.get('args', {}).get('correlation', 0)]
        ops, api = joined(sys.argv[3])
        print('source: %d of %d GPU ops have their API call; dump: %d of %d'
              % (sum(c in src_api for c in src_ops), len(src_ops), sum(c in api for c in ops), len(ops)))
    elif mode == 'gpu-mem-peak':
        evs = [(e['ts'], e.get('pid', 0), e.get('tid', 0), i, e['args']) for i, e in enumerate(load(path)['traceEvents'])
               if e.get('ph') in ('i', 'I') and e.get('name') == '[memory]'
               and e.get('args', {}).get('Device Type') == 1 and e['args'].get('Device Id', -1) >= 0]
        net, peak = collections.Counter(), collections.Counter()
        for _, _, _, _, a in sorted(evs, key=lambda x: x[:4]):
            d = a['Device Id']
            net[d] += a.get('Bytes', 0)
            peak[d] = max(peak[d], net[d])
        for d in sorted(peak):
            print(d, peak[d])
    elif mode == 'gpu-mem-sites':
        gpu_mem_sites(path)
    elif mode == 'gpu-mem-totals':
        evs = [(e['ts'], i, e['args']) for i, e in enumerate(load(path)['traceEvents'])
               if e.get('ph') in ('i', 'I') and e.get('name') == '[memory]'
               and e.get('args', {}).get('Device Type') == 1 and e['args'].get('Device Id', -1) >= 0
               and e['args'].get('Bytes', 0) != 0
               and 'Total Allocated' in e['args'] and 'Total Reserved' in e['args']]
        mx, last = {}, {}
        for _, _, a in sorted(evs, key=lambda x: x[:2]):
            d = a['Device Id']
            ta, tr = a['Total Allocated'], a['Total Reserved']
            pa, pr = mx.get(d, (ta, tr))
            mx[d] = (max(pa, ta), max(pr, tr))
            last[d] = (ta, tr)
        for d in sorted(mx):
            print(d, mx[d][0], mx[d][1], last[d][0], last[d][1])
        if not mx:
            print('none')
    else:
        sys.exit('unknown mode ' + mode)


if __name__ == '__main__':
    main()
