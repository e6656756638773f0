"""Float32 stream-hint rule from an xload.py file: per format the time with the hint / without
(cs / none), and the fastest format per matrix with the hint only in the formats named, against
the fastest without. ``python policy.py FILE.jsonl ell,ellr,ellr-t,hyb,csr-merge [v]`` (v: a line
per matrix)."""
import json, math, collections, sys
ADOPT=set(sys.argv[2].split(','))
rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
per=collections.defaultdict(list); ratios=[]
gm=lambda a: math.exp(sum(map(math.log,a))/len(a))
for r in rows:
    fm={k:v for k,v in r.items() if isinstance(v,dict)}
    for f,d in fm.items(): per[f].append(d['cs']/d['none'])
    bn=min(d['none'] for d in fm.values())
    bp=min((d['cs'] if f in ADOPT else d['none']) for f,d in fm.items())
    ratios.append(bp/bn)
    if len(sys.argv) > 3: print(f"{r['spec'][4:50]:46s} nnz {r['nnz']/1e6:5.1f}M best none {bn:.4f} policy {bp/bn:.3f} xcus {r['cusparse_ms']/bn:.2f}")
for f,v in per.items(): print(f"{f:14s} n={len(v)} gm {gm(v):.3f} min {min(v):.3f} max {max(v):.3f}")
print('policy best/none gm %.3f min %.3f max %.3f' % (gm(ratios), min(ratios), max(ratios)))
