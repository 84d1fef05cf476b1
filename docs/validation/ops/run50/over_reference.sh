#!/bin/bash
# A copy of a models database whose rows read at the grid's reference level: each type's times
# scaled by (the grid's mean reference / the models' mean reference), forward and backward, so
# that `ops` reads a models row as measured x grid mean / its own reference (reference.py).
# Then model_calls.py on the copy is the estimate against the calls' sum "over the reference".
#   bash over_reference.sh GRID.sqlite MODELS.sqlite OUT.sqlite
set -euo pipefail
grid=$1 models=$2 out=$3
[ -e "$out" ] && { echo "over_reference.sh: $out exists" >&2; exit 2; }
cp "$models" "$out"
sqlite3 "$out" "attach '$grid' as g;
create temp table r as select m.op, m.dtype, gf/mf as kf, gb/mb as kb from
  (select op, dtype, avg(case when fwd_ref_s>0 then fwd_ref_s end) mf, avg(case when bwd_ref_s>0 then bwd_ref_s end) mb
     from main.op_times group by op, dtype) m join
  (select op, dtype, avg(case when fwd_ref_s>0 then fwd_ref_s end) gf, avg(case when bwd_ref_s>0 then bwd_ref_s end) gb
     from g.op_times group by op, dtype) gr on m.op = gr.op and m.dtype = gr.dtype;
update op_times set fwd_s = fwd_s * (select kf from r where r.op = op_times.op and r.dtype = op_times.dtype)
  where fwd_ref_s > 0 and (select kf from r where r.op = op_times.op and r.dtype = op_times.dtype) is not null;
update op_times set bwd_s = bwd_s * (select kb from r where r.op = op_times.op and r.dtype = op_times.dtype)
  where bwd_ref_s > 0 and (select kb from r where r.op = op_times.op and r.dtype = op_times.dtype) is not null;"
