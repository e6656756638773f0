"""Measured quick probes (files) fitted with and without the wide probe, against full calibrations."""
import sys, json
sys.path.insert(0, "/work/main/tools"); sys.path.insert(0, "/work/main")
import quick_crossval as qc
from clspmv.bench.suites import SUITES
fulls = [a for a in sys.argv[1:] if "full" in a]; quicks = [a for a in sys.argv[1:] if "full" not in a]
names = list(SUITES)
orig = qc.read_json
for label, drop in (("without wide", True), ("with wide", False)):
    def read(path, drop=drop):
        d = orig(path)
        if drop and "quick" in d.get("measurements", {}):
            q = d["measurements"]["quick"]
            for k in ("kernel_s", "conversion_s"):
                q[k] = {p: v for p, v in q[k].items() if not p.startswith("wide/")}
        return d
    qc.read_json = read
    recs = qc.measured_check("976aa3b", names, qc.Path("/tmp/clspmv-crossval-features"), fulls, quicks)
    for r in recs:
        r["pair"] = f"{label}: {qc.Path(r['quick']).parent.name} vs {qc.Path(r['full']).parent.name}"
    print(qc.table(recs, "pair", names))
    print(f"- {label}, tuning: {qc.score(recs, qc.TUNING)}")
    print(f"- {label}, held out: {qc.score(recs, set(names) - set(qc.TUNING))}\n")
    json.dump(recs, open(f"/tmp/exp43/measured-{label.replace(' ', '-')}.json", "w"))
