import json,sys,re,statistics as st
from collections import defaultdict
f=sys.argv[1]; A=sys.argv[2]; B=sys.argv[3]
vals=defaultdict(dict)  # (bench)->{(build,round):value}
for line in open(f):
    d=json.loads(line); m=re.match(r'(\w+)_(\w+)_r(\d+)',d['run'])
    kind,build,rnd=m.group(1),m.group(2),int(m.group(3))
    for b in d['benchmarks']:
        if b.get('run_type')!='iteration': continue
        v=b.get('items_per_second') or (1.0/b['real_time'])
        vals[b['name']][(build,rnd)]=v
for name,dv in vals.items():
    rs=sorted({r for (_,r) in dv})
    ratios=[dv[(B,r)]/dv[(A,r)] for r in rs if (A,r) in dv and (B,r) in dv]
    if not ratios: continue
    print(f"{name[:75]:75s} {st.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f}) wins {sum(x>1 for x in ratios)}/{len(ratios)}")
