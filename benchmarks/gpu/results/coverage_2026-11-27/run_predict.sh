# The ten of session 19's 28 unseen GEMM shapes whose untuned prediction the 20 shapes' logs
# change, predicted from the shipped log before (old) and after (new), alternately twice, in
# one call on one H200 (.oldlog/h200.jsonl: the shipped log before, carried).
# bash benchmarks/gpu/results/coverage_2026-11-27/run_predict.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
W=gemm:1778,827,41,gemm:19,4277,1104,gemm:4822,731,39,gemm:1215,318,127,gemm:93,6,773,gemm:20,68,1137,gemm:10,5524,626,gemm:9,581,90,gemm:74,1336,31,gemm:127,129,131
L=tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl
cp $L /tmp/new.jsonl
for r in 1 2; do for v in old new; do
  if [ $v = old ]; then cp .oldlog/h200.jsonl $L; else cp /tmp/new.jsonl $L; fi
  rm -rf /tmp/e; mkdir -p /tmp/e
  timeout 150 python benchmarks/gpu/bench.py --workloads $W --predict --skip acl,clblast,cuda-launch --log-dir /tmp/e --repeat 10 --out $OUT/predict_${v}_$r.txt > /dev/null 2>&1 || echo "fail $v $r"
done; done
cp /tmp/new.jsonl $L
grep -E "^GEMM .*\|" $OUT/predict_*.txt
